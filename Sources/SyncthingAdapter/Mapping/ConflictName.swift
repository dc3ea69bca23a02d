import Foundation

/// Syncthing's conflict copies: `NAME.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.EXT` beside
/// `NAME.EXT`, the original it belongs to.
public enum ConflictName {
    /// The folder-relative original of a conflict copy, or nil when the path is no copy.
    public static func original(of relative: String) -> String? {
        let marker = ".sync-conflict-"
        // A copy Syncthing is still downloading is its temporary file, not a copy yet (and
        // one under .stversions is an old version): an action on either would rename
        // Syncthing's own file away.
        if IgnorePatterns.isSyncthingInternal(relative) { return nil }
        guard let r = relative.range(of: marker, options: .backwards) else { return nil }
        let tail = relative[r.upperBound...]
        // YYYYMMDD-HHMMSS-DEVICE, DEVICE being the short device id (7 characters)
        let parts = tail.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let stamp = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard stamp.count == 3, stamp[0].count == 8, stamp[0].allSatisfy(\.isNumber),
              stamp[1].count == 6, stamp[1].allSatisfy(\.isNumber),
              !stamp[2].isEmpty, stamp[2].allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        let base = relative[..<r.lowerBound]
        let ext = parts.count > 1 ? "." + parts[1] : ""
        return String(base) + ext
    }
}
