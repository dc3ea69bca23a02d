#if canImport(Glibc)
import Glibc
#endif
import SyncBadgeClient
import SyncBadgeProtocol

/// How to print: colours only on a terminal and without NO_COLOR.
struct Style {
    let color: Bool
    let badges: [String: (glyph: String, ascii: String, color: String)]

    init(badgeLines: [WireMessage]) {
        color = isatty(STDOUT_FILENO) == 1 && (CLI.environment("NO_COLOR") ?? "").isEmpty && CLI.environment("TERM") != "dumb"
        var b: [String: (String, String, String)] = [:]
        for badge in badgeLines.compactMap(Badge.init) { b[badge.id] = (badge.glyph, badge.ascii, badge.color) }
        badges = b
    }

    func glyph(_ badge: String) -> String {
        guard let b = badges[badge] else { return "?" }
        return color ? "\u{1B}[\(b.color)m\(b.glyph)\u{1B}[0m" : b.glyph
    }

    func paint(_ text: String, badge: String) -> String {
        guard color, let b = badges[badge] else { return text }
        return "\u{1B}[\(b.color)m\(text)\u{1B}[0m"
    }
}

extension String {
    /// Fixed-width columns: cut to `width` characters, or filled with spaces up to it.
    func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}

extension Item {
    /// `⟳3 ✗1`-style summary of a directory's counts, worst first.
    func countSummary(_ style: Style) -> String {
        guard let counts else { return "" }
        return SyncState.worstFirst.filter { counts[$0] > 0 }
            .map { style.glyph($0.name) + "\(counts[$0])" }
            .joined(separator: " ")
    }

    func humanLine(_ style: Style, name: String) -> String {
        var line = "\(style.glyph(badge)) \(style.paint(stateName.padded(to: 8), badge: badge)) \(name)"
        if kind == .dir && name.last != "/" { line += "/" }
        if kind == .gone { line += " (deleted)" }
        if let progress { line += " \(progress)%" }
        if let message { line += " — \(message)" }
        if kind == .dir, counts != nil {
            let summary = countSummary(style)
            if !summary.isEmpty { line += "  [\(summary)]" }
        }
        return line
    }
}
