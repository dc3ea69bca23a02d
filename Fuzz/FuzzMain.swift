// libFuzzer entry point for the line codec and the request parser (`make fuzz`).
// Built with `swiftc -sanitize=fuzzer,address` together with SyncBadgeCore's sources, so it
// exercises exactly the code the daemon runs on every received line. The checks themselves are
// in FuzzChecks.swift, which the unit tests also run over the committed corpus.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    // A broken rule must crash: libFuzzer keeps the input that crashed as the reproducer.
    if let broken = FuzzChecks.violations(Array(UnsafeBufferPointer(start: data, count: count))).first {
        fatalError(broken)
    }
    return 0
}
