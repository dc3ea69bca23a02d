/// SyncBadge's version: `syncbadge --version`, `syncbadged --version`,
/// `syncbadge-syncthing --version`, `HELLO`'s `server=syncbadge/<version>`. The Debian packages
/// take theirs from debian/changelog and the Python package from Clients/python/pyproject.toml;
/// VersionTests checks that all three say the same (docs/PACKAGING.md, "Version").
public enum SyncBadgeVersion {
    public static let string = "0.1.0"
}
