extension Array where Element == UInt8 {
    /// The bytes as a NUL-terminated C string (paths are bytes, not Swift Strings).
    public func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        var z = self
        z.append(0)
        return try z.withUnsafeBufferPointer { try $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: z.count, body) }
    }
}
