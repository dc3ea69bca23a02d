// The states, the codec and the protocol's value types moved to SyncBadgeProtocol; every module
// that imports Core (the watcher, the store, the server) sees them as before, without an edit of
// its own while those modules are being reshaped in parallel (issue 28). `make fuzz` compiles
// both folders as one module, where there is nothing to import.
#if canImport(SyncBadgeProtocol)
@_exported import SyncBadgeProtocol
#endif
