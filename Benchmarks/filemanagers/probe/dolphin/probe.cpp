// make bench-fm's heartbeat in Dolphin's main loop: the Qt twin of ../syncbadge_probe.py, with
// the same signals, environment and files (Benchmarks/filemanagers/README.md).
//
// Dolphin loads every KOverlayIconPlugin of kfN/overlayicon, so this one is loaded beside the
// overlay plugin measured (and alone on the no-extension side); it returns no overlays. With
// SYNCBADGE_PROBE_OUT set, SIGUSR2 starts a Qt::PreciseTimer of SYNCBADGE_PROBE_MS (5 ms) that
// stamps CLOCK_MONOTONIC (the harness's time.monotonic()) at every tick and creates
// $SYNCBADGE_PROBE_OUT.<n>.on once the main loop has handled the signal; SIGUSR1 stops it and
// writes the stamps, one "%.6f" a line, to $SYNCBADGE_PROBE_OUT.<n> (n from 1; written to a
// temporary name and renamed, so a file that is there is whole). A gap between two stamps is how
// long the main loop did not come back to the timer: a frozen window. While off, it adds no
// timer to the loop, so idle wake-ups are measured without it.
//
// The signal handler only writes the signal's number to a pipe (write() is async-signal-safe);
// a QSocketNotifier reads it in the main loop, where the work is done. Not a signalfd: that
// needs the signals blocked in every thread, and Dolphin's threads (D-Bus, KIO) exist already.
#include <KOverlayIconPlugin>

#include <QSocketNotifier>
#include <QTimer>
#include <QUrl>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {
int s_pipe[2] = {-1, -1};

void onSignal(int sig)
{
    const int saved = errno;
    const char byte = static_cast<char>(sig);
    ssize_t n = write(s_pipe[1], &byte, 1);   // full pipe: the signal before it is pending anyway
    (void)n;
    errno = saved;
}

double monotonic()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
}  // namespace

class SyncBadgeProbe : public KOverlayIconPlugin
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.syncbadge.KOverlayIconPlugin.probe" FILE "syncbadge_probe.json")

public:
    explicit SyncBadgeProbe(QObject *parent = nullptr)
        : KOverlayIconPlugin(parent)
    {
        const QByteArray out = qgetenv("SYNCBADGE_PROBE_OUT");
        if (out.isEmpty() || s_pipe[0] >= 0) {
            return;   // not under the bench (or already set up by another instance)
        }
        m_out = out.toStdString();
        bool ok = false;
        const int ms = qEnvironmentVariableIntValue("SYNCBADGE_PROBE_MS", &ok);
        m_timer.setInterval(ok && ms > 0 ? ms : 5);
        m_timer.setTimerType(Qt::PreciseTimer);
        connect(&m_timer, &QTimer::timeout, this, [this] { m_ticks.push_back(monotonic()); });
        if (pipe2(s_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
            std::perror("syncbadge-probe: pipe2");
            return;
        }
        m_notifier = new QSocketNotifier(s_pipe[0], QSocketNotifier::Read, this);
        connect(m_notifier, &QSocketNotifier::activated, this, &SyncBadgeProbe::readSignals);
        struct sigaction sa{};
        sa.sa_handler = onSignal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, nullptr);
        sigaction(SIGUSR2, &sa, nullptr);
        if (qgetenv("SYNCBADGE_PROBE_START") == "1") {
            start();
        }
        std::fprintf(stderr, "syncbadge-probe: loaded in %d\n", static_cast<int>(getpid()));
        std::fflush(stderr);
    }

    QStringList getOverlays(const QUrl &) override
    {
        return {};
    }

private:
    void readSignals()
    {
        char buf[64];
        ssize_t n;
        while ((n = read(s_pipe[0], buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                if (buf[i] == SIGUSR2) {
                    start();
                } else if (buf[i] == SIGUSR1) {
                    stop();
                }
            }
        }
    }

    void start()
    {
        if (m_timer.isActive()) {
            return;
        }
        m_ticks.clear();
        m_ticks.reserve(1 << 16);
        m_ticks.push_back(monotonic());
        m_timer.start();
        const std::string on = m_out + "." + std::to_string(m_dumps + 1) + ".on";
        if (FILE *f = std::fopen(on.c_str(), "w")) {
            std::fclose(f);
        }
    }

    void stop()
    {
        if (!m_timer.isActive()) {
            return;
        }
        m_timer.stop();
        m_ticks.push_back(monotonic());
        ++m_dumps;
        const std::string path = m_out + "." + std::to_string(m_dumps);
        const std::string tmp = path + ".tmp";
        FILE *f = std::fopen(tmp.c_str(), "w");
        if (f == nullptr) {
            std::perror("syncbadge-probe: the stamps");
            return;
        }
        for (const double t : m_ticks) {
            std::fprintf(f, "%.6f\n", t);
        }
        if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
            std::perror("syncbadge-probe: the stamps");
        }
        m_ticks.clear();
    }

    std::string m_out;
    QTimer m_timer;
    QSocketNotifier *m_notifier = nullptr;
    std::vector<double> m_ticks;
    int m_dumps = 0;
};

#include "probe.moc"
