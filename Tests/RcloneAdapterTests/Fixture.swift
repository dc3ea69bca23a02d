import Foundation

/// JSON recorded from rclone 1.60.1 (Debian 12) or documented for 1.68, by name.
enum Fixture {
    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + name))
    }

    static func decode<T: Decodable>(_ t: T.Type, _ name: String) throws -> T {
        try JSONDecoder().decode(T.self, from: data(name))
    }
}
