// Core's own API is written in the protocol's values: the tree answers `Item`s, takes
// `SetRequest`s, counts `SyncState`s. A module that uses Core needs them, so Core re-exports
// SyncBadgeProtocol, as NIO re-exports NIOCore. `make fuzz` compiles both folders as one module,
// where there is nothing to import.
#if canImport(SyncBadgeProtocol)
@_exported import SyncBadgeProtocol
#endif
