#if canImport(Glibc)
import Glibc
#endif

/// A named, detached POSIX thread running one closure: what the watcher used Foundation's
/// `Thread` for, without Foundation (whose internationalization half and ICU data would be most
/// of the daemon's size; docs/PACKAGING.md, "Binary size"). The same shape as Foundation's:
/// `Thread { ... }`, `name`, `start()`.
final class Thread {
    private let body: @Sendable () -> Void
    /// Set before `start()`; the kernel keeps the first 15 bytes (`ps -L`, `top -H`).
    var name: String?

    init(block: @escaping @Sendable () -> Void) {
        body = block
    }

    func start() {
        // The context owns the closure and the name until the thread has taken them.
        let context = Unmanaged.passRetained(Context(body: body, name: name)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            if let name = context.name { Thread.setName(name) }
            context.body()
            return nil
        }, context)
        pthread_attr_destroy(&attributes)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    /// Names the calling thread as pthread_setname_np does (which Swift's Glibc module does not
    /// export: it is a GNU extension): through its `comm` file.
    private static func setName(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    private final class Context {
        let body: @Sendable () -> Void
        let name: String?
        init(body: @escaping @Sendable () -> Void, name: String?) {
            self.body = body
            self.name = name
        }
    }
}
