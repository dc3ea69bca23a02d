// The overlay plugin's cache, as pure logic: which directories are observed (least recently
// asked ones dropped past a cap), what the daemon said of their entries, and, for each event,
// which entries' emblems changed and what to send. Only entries Dolphin asked about are
// reported changed: Dolphin asks about the rest when it lays them out (a few pages around the
// view, ~600 of a folder of 20,000), and an emblem it never drew need not be redrawn. No socket
// and no Qt event loop here, so the
// tests drive it event by event (tests/test_cache.cpp); overlayplugin.cpp does the I/O.
#pragma once

#include "wire.h"

#include <QHash>
#include <QSet>
#include <QStringList>

namespace SyncBadge {

class OverlayCache {
public:
    // An entry whose emblems may have changed: its directory (real path) and name.
    struct Changed {
        QByteArray dir;
        QByteArray name;
        bool operator==(const Changed &o) const { return dir == o.dir && name == o.name; }
    };
    using Changes = QVector<Changed>;
    // What to send: OBSERVE and UNOBSERVE of these directories.
    struct Actions {
        QVector<QByteArray> observe;
        QVector<QByteArray> unobserve;
    };

    explicit OverlayCache(int maxDirs = 64);

    // Dolphin asks about `name` in `dir` (the directory's real path; `alias` is the path Dolphin
    // shows it under). Answers from the cache; a directory seen for the first time is observed
    // (when `ready`), and the least recently asked one past the cap unobserved.
    QStringList ask(const QByteArray &dir, const QString &alias, const QByteArray &name, bool ready, Actions &actions);
    QStringList overlays(const QByteArray &dir, const QByteArray &name) const;

    // OBSERVE (or LIST after a RESET) answered OK with these entries.
    Changes listed(const QByteArray &dir, const QVector<Item> &items);
    // The same as the answer's lines arrive, one at a time: a listing of 20,000 entries is taken
    // in slices of the event loop (the connection's), and entries are updated in place, so no
    // table of the whole directory is built and freed in one go.
    void listingStarts(const QByteArray &dir);
    Changes listedItem(const QByteArray &dir, const Item &item);
    // The answer ended OK: entries the listing did not name are gone.
    Changes listingEnds(const QByteArray &dir);
    // OBSERVE answered ERR `code`: no badges there. Returns the delay in ms after which to ask
    // again (a directory made a moment ago that the daemon has not indexed yet), or -1.
    int refused(const QByteArray &dir, const QString &code);
    // The delay of refused() ran out: whether to OBSERVE again now (marked asked).
    bool retryDue(const QByteArray &dir);

    Changes pushItem(const Item &item, Actions &actions);
    Changes pushGone(const QByteArray &path);
    // `* RESET <dir>`: whether to LIST it again.
    bool pushReset(const QByteArray &dir) const;
    // `* ROOT <root> ...`: a removed root's directories lose their badges; directories under a
    // root that were outside are observed again (the root is new, or done scanning).
    Changes pushRoot(const QByteArray &root, bool removed, bool scanning, bool ready, Actions &actions);

    // HELLO answered on a new connection: observe again what Dolphin showed.
    QVector<QByteArray> connected();
    // The connection closed: nothing cached is true any more; the entries that showed emblems.
    Changes disconnected();
    // The entries that show `badge` (its icon was just installed).
    Changes showing(const QString &badge) const;

    QStringList aliases(const QByteArray &dir) const;
    bool isObserved(const QByteArray &dir) const;
    QVector<QByteArray> order() const { return m_order; }  // least recently asked first

    static const QVector<int> &retryDelays();

private:
    struct Entry {
        Item item;
        quint32 listing = 0;   // the listing that last named it
    };
    struct Dir {
        QHash<QByteArray, Entry> items;
        quint32 listing = 0;   // the listing under way or last done
        QSet<QByteArray> shown;   // the names Dolphin asked about: the only ones it draws from us
        QSet<QString> aliases;
        bool listed = false;   // OBSERVE answered OK on this connection
        bool asked = false;    // OBSERVE sent on this connection
        bool outside = false;  // the daemon refused it: no badges
        int retries = 0;
    };

    void touch(const QByteArray &dir);
    static QByteArray parentOf(const QByteArray &path, QByteArray *name);
    static bool under(const QByteArray &path, const QByteArray &root);

    int m_maxDirs;
    QHash<QByteArray, Dir> m_dirs;
    QVector<QByteArray> m_order;
    QHash<QByteArray, QSet<QByteArray>> m_shownBefore;   // `shown` of evicted directories
};

}  // namespace SyncBadge
