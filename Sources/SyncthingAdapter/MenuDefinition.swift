#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import SyncBadgeClient
import SyncBadgeCore

/// A menu or toolbar item the adapter defines.
public struct MenuDefinition: Sendable, Equatable {
    public var kind: String
    public var id: String
    public var title: String
    public var states: [SyncState]
    public var enabled: Bool
    public init(kind: String, id: String, title: String, states: [SyncState] = [], enabled: Bool = true) {
        self.kind = kind; self.id = id; self.title = title; self.states = states; self.enabled = enabled
    }
}

/// The toolbar item an adapter defines.
public struct ToolbarDefinition: Sendable, Equatable {
    public var name: String
    public var tooltip: String
    public init(name: String, tooltip: String) {
        self.name = name; self.tooltip = tooltip
    }
}
