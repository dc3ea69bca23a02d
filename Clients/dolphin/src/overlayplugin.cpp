#include "overlayplugin.h"

#include "emblems.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTimer>
#include <QUrl>

using namespace SyncBadge;

namespace {
constexpr int MaxDirs = 64;  // directories observed at once (least recently asked ones go)
// How long one slice of overlaysChanged may take before Dolphin's event loop gets a turn (it
// redraws in between): a frame is 16 ms, and the socket's own slice may run in the same turn.
constexpr qint64 EmitSliceNs = 3 * 1000 * 1000;
}  // namespace

SyncBadgeOverlayPlugin::SyncBadgeOverlayPlugin(QObject *parent)
    : KOverlayIconPlugin(parent)
    , m_conn("viewer", "dolphin", this)
    , m_cache(MaxDirs)
{
    connect(&m_conn, &Connection::hello, this, &SyncBadgeOverlayPlugin::onHello);
    connect(&m_conn, &Connection::push, this, &SyncBadgeOverlayPlugin::onPush);
    connect(&m_conn, &Connection::closed, this, &SyncBadgeOverlayPlugin::onClosed);
    m_emitTimer.setSingleShot(true);
    m_emitTimer.setInterval(0);
    connect(&m_emitTimer, &QTimer::timeout, this, &SyncBadgeOverlayPlugin::emitChanged);
    m_conn.start();
}

QByteArray SyncBadgeOverlayPlugin::realDir(const QString &dir)
{
    auto it = m_real.constFind(dir);
    if (it != m_real.constEnd()) {
        return *it;
    }
    if (m_real.size() > 4 * MaxDirs) {
        m_real.clear();
    }
    // The daemon knows real paths; Dolphin may show a directory through a symbolic link.
    const QString canonical = QFileInfo(dir).canonicalFilePath();
    const QByteArray real = QFile::encodeName(canonical.isEmpty() ? dir : canonical);
    m_real.insert(dir, real);
    return real;
}

QStringList SyncBadgeOverlayPlugin::getOverlays(const QUrl &item)
{
    if (!item.isLocalFile()) {
        return {};
    }
    QString path = item.toLocalFile();
    while (path.size() > 1 && path.endsWith(QLatin1Char('/'))) {
        path.chop(1);
    }
    const int slash = path.lastIndexOf(QLatin1Char('/'));
    if (slash < 0 || slash == path.size() - 1) {
        return {};
    }
    const QString dir = slash == 0 ? QStringLiteral("/") : path.left(slash);
    const QByteArray name = QFile::encodeName(path.mid(slash + 1));
    const QByteArray real = realDir(dir);
    if (debugEnabled() && !m_cache.aliases(real).contains(dir)) {
        debug(QStringLiteral("asked about the entries of %1%2").arg(dir, m_conn.ready() ? QString() : QStringLiteral(" (no daemon yet)")));
    }
    OverlayCache::Actions actions;
    const QStringList overlays = icons(m_cache.ask(real, dir, name, m_conn.ready(), actions));
    run(actions);
    if (debugEnabled()) {   // Dolphin asks for every item it lays out: no strings built otherwise
        debug(QStringLiteral("drew %1 emblem=%2").arg(path, overlays.isEmpty() ? QStringLiteral("-") : overlays.join(QLatin1Char(','))));
    }
    return overlays;
}

void SyncBadgeOverlayPlugin::run(const OverlayCache::Actions &actions)
{
    for (const QByteArray &dir : actions.unobserve) {
        m_conn.send("UNOBSERVE", {dir});
        debug(QStringLiteral("unobserved %1").arg(QFile::decodeName(dir)));
    }
    for (const QByteArray &dir : actions.observe) {
        observe(dir);
    }
}

void SyncBadgeOverlayPlugin::observe(const QByteArray &dir)
{
    m_cache.listingStarts(dir);
    m_conn.send("OBSERVE", {dir}, {}, [this, dir](const Reply &reply) {
        if (reply.final.kind == "CLOSED") {
            return;
        }
        if (reply.ok()) {
            debug(QStringLiteral("observing %1 (%2 entries)").arg(QFile::decodeName(dir), reply.final.opt("count")));
            changed(m_cache.listingEnds(dir));
            return;
        }
        // Outside every root, not a directory, or not indexed yet: no badges there.
        const int delay = m_cache.refused(dir, reply.code());
        debug(QStringLiteral("cannot observe %1: %2").arg(QFile::decodeName(dir), reply.code()));
        if (delay >= 0) {
            QTimer::singleShot(delay, this, [this, dir] {
                if (m_conn.ready() && m_cache.retryDue(dir)) {
                    observe(dir);
                }
            });
        }
    }, [this, dir](const Message &line) { listedLine(dir, line); });
}

void SyncBadgeOverlayPlugin::listedLine(const QByteArray &dir, const Message &line)
{
    if (const auto item = Item::fromMessage(line)) {
        changed(m_cache.listedItem(dir, *item));
    }
}

void SyncBadgeOverlayPlugin::changed(const OverlayCache::Changes &changes)
{
    // Queued, once per entry until told: what Dolphin is told is the cache at that time, so an
    // entry that changes twice before then is redrawn once.
    for (const auto &c : changes) {
        QByteArray key = c.dir;
        key += '/';
        key += c.name;
        if (!m_dirtySet.contains(key)) {
            m_dirtySet.insert(key);
            m_dirty.append(c);
        }
    }
    if (m_dirtyAt < m_dirty.size() && !m_emitTimer.isActive()) {
        m_emitTimer.start();
    }
}

void SyncBadgeOverlayPlugin::emitChanged()
{
    QElapsedTimer slice;
    slice.start();
    while (m_dirtyAt < m_dirty.size()) {
        const OverlayCache::Changed c = m_dirty.at(m_dirtyAt++);
        QByteArray key = c.dir;
        key += '/';
        key += c.name;
        m_dirtySet.remove(key);
        const QStringList overlays = icons(m_cache.overlays(c.dir, c.name));
        const QString name = QFile::decodeName(c.name);
        for (const QString &alias : m_cache.aliases(c.dir)) {
            const QString path = alias == QLatin1String("/") ? QString(alias + name) : QString(alias + QLatin1Char('/') + name);
            if (debugEnabled()) {
                debug(QStringLiteral("changed %1 emblem=%2").arg(path, overlays.isEmpty() ? QStringLiteral("-") : overlays.join(QLatin1Char(','))));
            }
            Q_EMIT overlaysChanged(QUrl::fromLocalFile(path), overlays);
        }
        if (slice.nsecsElapsed() >= EmitSliceNs) {
            break;
        }
    }
    if (m_dirtyAt < m_dirty.size()) {
        m_emitTimer.start();   // the rest in the next turn of the event loop
    } else {
        m_dirty.clear();
        m_dirtyAt = 0;
    }
}

void SyncBadgeOverlayPlugin::onHello(bool newEpoch)
{
    Q_UNUSED(newEpoch)  // a new connection observes nothing, new daemon or not: observe again
    for (const QByteArray &dir : m_cache.connected()) {
        observe(dir);
    }
    m_conn.send("BADGES", {}, {}, [this](const Reply &reply) {
        for (const Message &line : reply.lines) {
            if (line.kind == "BADGE") {
                defineBadge(line.arg(0), line.opt("image"), false);
            }
        }
    });
}

void SyncBadgeOverlayPlugin::onPush(const Message &m)
{
    OverlayCache::Actions actions;
    if (m.kind == "ITEM") {
        if (const auto item = Item::fromMessage(m)) {
            const auto changes = m_cache.pushItem(*item, actions);
            run(actions);
            changed(changes);
        }
    } else if (m.kind == "GONE" && !m.fields.isEmpty()) {
        changed(m_cache.pushGone(m.fields[0]));
    } else if (m.kind == "RESET" && !m.fields.isEmpty()) {
        const QByteArray dir = m.fields[0];
        if (m_cache.pushReset(dir)) {
            m_cache.listingStarts(dir);
            m_conn.send("LIST", {dir}, {}, [this, dir](const Reply &reply) {
                if (reply.ok()) {
                    changed(m_cache.listingEnds(dir));
                }
            }, [this, dir](const Message &line) { listedLine(dir, line); });
        }
    } else if (m.kind == "ROOT" && !m.fields.isEmpty()) {
        const auto changes = m_cache.pushRoot(m.fields[0], m.arg(1) == QLatin1String("removed"), m.has("scanning"), m_conn.ready(), actions);
        run(actions);
        changed(changes);
    } else if (m.kind == "BADGE" && !m.fields.isEmpty()) {
        defineBadge(m.arg(0), m.opt("image"), true);
    }
}

QStringList SyncBadgeOverlayPlugin::icons(QStringList overlays) const
{
    // A badge installed while Dolphin runs is named by its file: Qt's and KDE's icon loaders both
    // take an absolute path as it is, whereas a theme lookup can miss it for good when the
    // user's icon directory did not exist yet as Dolphin started (KF6 on a fresh home).
    if (!m_installed.isEmpty()) {
        for (QString &overlay : overlays) {
            overlay = m_installed.value(overlay, overlay);
        }
    }
    return overlays;
}

void SyncBadgeOverlayPlugin::onClosed()
{
    // What was cached may be wrong by the time a daemon answers again: show nothing meanwhile.
    changed(m_cache.disconnected());
}

void SyncBadgeOverlayPlugin::defineBadge(const QString &id, const QString &image, bool pushed)
{
    // The default set is installed with the plugin; a badge listed at connect is installed only
    // when no icon directory has it; one a push (re)defines, always.
    if (id.isEmpty() || image.isEmpty() || m_badgeImages.value(id) == image) {
        return;
    }
    const QString emblem = QStringLiteral("emblem-syncbadge-") + id;
    if (!pushed) {
        const QString found = installedEmblem(emblem);
        if (!found.isEmpty()) {
            m_badgeImages.insert(id, image);
            m_installed.insert(emblem, found);
            return;
        }
    }
    const QString installed = installBadgeImage(id, image);
    if (!installed.isEmpty()) {
        m_badgeImages.insert(id, image);
        m_installed.insert(emblem, installed);
        debug(QStringLiteral("installed the badge %1 from %2").arg(id, image));
        changed(m_cache.showing(id));
    }
}
