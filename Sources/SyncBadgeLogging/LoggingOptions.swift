import ArgumentParser
import Logging

/// `--log-level`, as each long-running executable (the daemon and the adapters) takes it, and
/// the one way they send their logs to standard error. Only an executable bootstraps logging:
/// the libraries take a `Logger`.
public struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    public var logLevel: Logger.Level = .info

    public init() {}

    /// Sends every logger's records at `logLevel` and above to standard error, and returns the
    /// executable's own logger. Call it once, first thing in `run`.
    public func bootstrap(label: String) -> Logger {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        return Logger(label: label)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
