#if canImport(Glibc)
import Glibc
#endif

/// Standard output and error without Foundation's `FileHandle`: the CLI imports only
/// FoundationEssentials, which keeps ICU and the rest of Foundation out of a binary that
/// starts for every `syncbadge status` (docs/PERFORMANCE.md).
enum Output {
    /// Writes all of `bytes`, across short writes and interrupted calls. A reader that went
    /// away ends the write (SIGPIPE, unless ignored, ends the program first, as before).
    static func write(_ bytes: [UInt8], to fd: Int32 = STDOUT_FILENO) {
        bytes.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = Glibc.write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                done += n
            }
        }
    }

    static func write(_ text: String, to fd: Int32 = STDOUT_FILENO) {
        write(Array(text.utf8), to: fd)
    }
}

func printLine(_ s: String) {
    Output.write(s + "\n")
}
