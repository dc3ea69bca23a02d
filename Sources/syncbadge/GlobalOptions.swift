/// The options every subcommand takes may also stand before it, as git's `-C`, docker's
/// `--host` and kubectl's `--context` do: `syncbadge --socket S roots`. ArgumentParser reads
/// a subcommand's options only after its name, so they are moved there before parsing.
enum GlobalOptions {
    /// Options with a value: `--socket PATH` or `--socket=PATH`.
    static let withValue: Set<String> = ["--socket"]
    static let flags: Set<String> = ["--json", "--no-spawn"]

    /// `arguments` (without the program name) with the global options found before the
    /// subcommand moved just after it. Unchanged when none stand there, or when no subcommand
    /// follows them (the parser then says what is wrong). Before a word that is none of
    /// `subcommands` they are dropped, so the parser names that word, not `--socket`.
    static func hoisted(_ arguments: [String], subcommands: Set<String>) -> [String] {
        var leading: [String] = []
        var i = arguments.startIndex
        while i < arguments.endIndex {
            let a = arguments[i]
            if flags.contains(a) {
                leading.append(a)
                i += 1
            } else if withValue.contains(a), i + 1 < arguments.endIndex {
                leading += [a, arguments[i + 1]]
                i += 2
            } else if let eq = a.firstIndex(of: "="), withValue.contains(String(a[..<eq])) {
                leading.append(a)
                i += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, i < arguments.endIndex, !arguments[i].hasPrefix("-") else { return arguments }
        // `help` takes a subcommand's name, not options: `syncbadge --socket S help` is help.
        if arguments[i] == "help" || !subcommands.contains(arguments[i]) { return Array(arguments[i...]) }
        return [arguments[i]] + leading + arguments[(i + 1)...]
    }
}
