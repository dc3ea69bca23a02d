import ArgumentParser

// `syncbadge status` with nothing but paths runs in shell prompts, scripts and loops, where
// its start-up is most of its cost. ArgumentParser builds its whole command tree by
// reflection before it parses anything (dynamic casts that scan every protocol conformance of
// the binary: over half of a `status` run; docs/PERFORMANCE.md), so that form skips it.
// Anything else, an option or `--` included, goes through the parser, which also gives help
// and usage errors.
let given = Array(CommandLine.arguments.dropFirst())
// Only a leading `-` can be a global option before the subcommand: the fast path pays one
// comparison.
let arguments = given.first?.hasPrefix("-") == true
    ? GlobalOptions.hoisted(given, subcommands: Set(SyncBadgeCLI.configuration.subcommands.map { $0._commandName }))
    : given
if arguments.first == "status", !arguments.dropFirst().contains(where: { $0.hasPrefix("-") }) {
    do {
        try StatusReport(paths: Array(arguments.dropFirst())).run()
    } catch {
        SyncBadgeCLI.exit(withError: error)
    }
} else {
    SyncBadgeCLI.main(arguments)
}
