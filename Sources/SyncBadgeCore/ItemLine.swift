extension ItemView {
    /// `<head> ITEM <path> <state> badge=<id> kind=<kind> [progress=] [message=] gen=<n> [counts=]`.
    public func wireLine(head: String) -> WireLine {
        var line = WireLine(head)
        line.word("ITEM")
        line.field(path)
        line.word(state.name)
        line.option("badge", badge)
        line.word("kind=" + kind.name)
        if let progress { line.word("progress=\(progress)") }
        if let message { line.option("message", message) }
        line.word("gen=\(gen)")
        if let counts { line.word("counts=" + counts.wireValue) }
        return line
    }

    /// A path under no root: `<head> ITEM <path> outside badge=outside kind=<kind>`.
    public static func outsideLine(head: String, path: [UInt8], kind: EntryKind) -> WireLine {
        var line = WireLine(head)
        line.word("ITEM")
        line.field(path)
        line.word("outside")
        line.word("badge=outside")
        line.word("kind=" + kind.name)
        return line
    }
}
