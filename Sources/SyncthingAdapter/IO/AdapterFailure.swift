#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SyncBadgeProtocol

/// What stops the adapter for good.
public enum AdapterFailure: Error, CustomStringConvertible {
    /// A wrong key or address: exit 78 (EX_CONFIG) with this line.
    case configuration(String)

    public var description: String {
        switch self { case .configuration(let s): s }
    }
}
