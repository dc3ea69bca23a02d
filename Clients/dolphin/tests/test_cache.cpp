// The overlay cache's logic, event by event: what Dolphin is told, what is sent.
#include "overlaycache.h"

#include <QTest>

using namespace SyncBadge;
using Changed = OverlayCache::Changed;

namespace {
Item item(const QByteArray &path, const char *state, const QString &badge = QString(), const QString &kind = QStringLiteral("file"))
{
    Item i;
    i.path = path;
    i.state = QString::fromLatin1(state);
    i.badge = badge.isEmpty() ? i.state : badge;
    i.kind = kind;
    return i;
}
}  // namespace

class TestCache : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void observesOnFirstAskAndAnswersFromTheListing()
    {
        OverlayCache cache(4);
        OverlayCache::Actions actions;
        QVERIFY(cache.ask("/r", QStringLiteral("/r"), "a", true, actions).isEmpty());
        QCOMPARE(actions.observe, (QVector<QByteArray>{"/r"}));
        OverlayCache::Actions again;
        cache.ask("/r", QStringLiteral("/r"), "b", true, again);
        QVERIFY(again.observe.isEmpty());   // once per directory
        cache.ask("/r", QStringLiteral("/r"), "c", true, again);
        const auto changes = cache.listed("/r", {item("/r/a", "synced"), item("/r/b", "unknown"), item("/r/c", "error")});
        QCOMPARE(changes.size(), 2);        // a and c show emblems now; unknown shows none
        QVERIFY(changes.contains(Changed{"/r", "a"}) && changes.contains(Changed{"/r", "c"}));
        QCOMPARE(cache.overlays("/r", "a"), QStringList{QStringLiteral("emblem-syncbadge-synced")});
        QVERIFY(cache.overlays("/r", "b").isEmpty());
    }

    void notReadyObservesOnConnect()
    {
        OverlayCache cache(4);
        OverlayCache::Actions actions;
        cache.ask("/r", QStringLiteral("/r"), "a", false, actions);
        QVERIFY(actions.observe.isEmpty());
        QCOMPARE(cache.connected(), (QVector<QByteArray>{"/r"}));
    }

    void evictsTheLeastRecentlyAsked()
    {
        OverlayCache cache(2);
        OverlayCache::Actions a;
        cache.ask("/r/1", QStringLiteral("/r/1"), "x", true, a);
        cache.ask("/r/2", QStringLiteral("/r/2"), "x", true, a);
        cache.ask("/r/1", QStringLiteral("/r/1"), "y", true, a);   // 1 is the most recent now
        OverlayCache::Actions b;
        cache.ask("/r/3", QStringLiteral("/r/3"), "x", true, b);
        QCOMPARE(b.unobserve, (QVector<QByteArray>{"/r/2"}));
        QCOMPARE(b.observe, (QVector<QByteArray>{"/r/3"}));
        QCOMPARE(cache.order(), (QVector<QByteArray>{"/r/1", "/r/3"}));
    }

    void anEvictedDirectoryRedrawsWhatDolphinStillShows()
    {
        OverlayCache cache(1);
        OverlayCache::Actions a;
        cache.ask("/r/1", QStringLiteral("/r/1"), "x", true, a);
        cache.ask("/r/1", QStringLiteral("/r/1"), "y", true, a);
        cache.listed("/r/1", {item("/r/1/x", "synced"), item("/r/1/y", "synced")});
        cache.ask("/r/2", QStringLiteral("/r/2"), "z", true, a);   // evicts /r/1, still on screen
        OverlayCache::Actions b;
        cache.ask("/r/1", QStringLiteral("/r/1"), "x", true, b);   // back: only x asked so far
        QCOMPARE(b.observe, (QVector<QByteArray>{"/r/1"}));
        // y changed while /r/1 was not observed: Dolphin still draws y's old emblem, so the new
        // listing redraws it although Dolphin has not asked about y since.
        QCOMPARE(cache.listed("/r/1", {item("/r/1/x", "synced"), item("/r/1/y", "error")}),
                 (OverlayCache::Changes{{"/r/1", "x"}, {"/r/1", "y"}}));
    }

    void evictingARefusedDirectorySendsNothing()
    {
        OverlayCache cache(1);
        OverlayCache::Actions a;
        cache.ask("/elsewhere", QStringLiteral("/elsewhere"), "x", true, a);
        QCOMPARE(cache.refused("/elsewhere", QStringLiteral("outside")), -1);
        OverlayCache::Actions b;
        cache.ask("/r", QStringLiteral("/r"), "x", true, b);
        QVERIFY(b.unobserve.isEmpty());
    }

    void pushesChangeExactlyTheItemsThatChanged()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r", QStringLiteral("/r"), "a", true, a);
        cache.ask("/r", QStringLiteral("/r"), "b", true, a);
        cache.listed("/r", {item("/r/a", "syncing"), item("/r/b", "synced")});
        auto s = item("/r/a", "syncing");
        s.progress = 50;   // the same emblem: nothing to redraw
        QVERIFY(cache.pushItem(s, a).isEmpty());
        QCOMPARE(cache.pushItem(item("/r/a", "synced"), a), (OverlayCache::Changes{{"/r", "a"}}));
        QCOMPARE(cache.overlays("/r", "a"), QStringList{QStringLiteral("emblem-syncbadge-synced")});
        QCOMPARE(cache.pushItem(item("/r/b", "synced", QStringLiteral("cloud")), a), (OverlayCache::Changes{{"/r", "b"}}));
        QCOMPARE(cache.showing(QStringLiteral("cloud")), (OverlayCache::Changes{{"/r", "b"}}));
        QVERIFY(cache.pushItem(item("/other/x", "error"), a).isEmpty());   // not observed here
        QCOMPARE(cache.pushGone("/r/a"), (OverlayCache::Changes{{"/r", "a"}}));
        QVERIFY(cache.overlays("/r", "a").isEmpty());
    }

    void onlyWhatDolphinAskedAboutIsRedrawn()
    {
        // Dolphin lays out (and asks about) a few pages of a big folder; the rest it asks about
        // when it shows them, and gets the cache's answer then.
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r", QStringLiteral("/r"), "a", true, a);
        QCOMPARE(cache.listed("/r", {item("/r/a", "synced"), item("/r/b", "synced")}), (OverlayCache::Changes{{"/r", "a"}}));
        QCOMPARE(cache.pushItem(item("/r/a", "syncing"), a), (OverlayCache::Changes{{"/r", "a"}}));
        QVERIFY(cache.pushItem(item("/r/b", "syncing"), a).isEmpty());
        QCOMPARE(cache.ask("/r", QStringLiteral("/r"), "b", true, a), QStringList{QStringLiteral("emblem-syncbadge-syncing")});
        QCOMPARE(cache.pushItem(item("/r/b", "error"), a), (OverlayCache::Changes{{"/r", "b"}}));
        QVERIFY(cache.pushGone("/r/c").isEmpty());
        QCOMPARE(cache.pushGone("/r/b"), (OverlayCache::Changes{{"/r", "b"}}));
        // Still asked about: made again under that name, it is redrawn when it changes.
        cache.pushItem(item("/r/b", "synced"), a);
        QCOMPARE(cache.pushItem(item("/r/b", "error"), a), (OverlayCache::Changes{{"/r", "b"}}));
        QCOMPARE(cache.disconnected().size(), 2);
    }

    void aListingTakenLineByLineDropsWhatItDidNotName()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r", QStringLiteral("/r"), "a", true, a);
        cache.ask("/r", QStringLiteral("/r"), "b", true, a);
        cache.ask("/r", QStringLiteral("/r"), "c", true, a);
        cache.listed("/r", {item("/r/a", "synced"), item("/r/b", "synced")});
        // * RESET /r, then LIST /r: its lines come one by one, pushes before them are older.
        cache.listingStarts("/r");
        QVERIFY(cache.pushItem(item("/r/c", "error"), a).size() == 1);
        QVERIFY(cache.listedItem("/r", item("/r/a", "synced")).isEmpty());
        QCOMPARE(cache.listedItem("/r", item("/r/b", "syncing")), (OverlayCache::Changes{{"/r", "b"}}));
        QVERIFY(cache.listedItem("/elsewhere", item("/elsewhere/x", "synced")).isEmpty());
        QCOMPARE(cache.listingEnds("/r"), (OverlayCache::Changes{{"/r", "c"}}));   // gone by then
        QCOMPARE(cache.overlays("/r", "b"), QStringList{QStringLiteral("emblem-syncbadge-syncing")});
        QVERIFY(cache.overlays("/r", "c").isEmpty());
        QCOMPARE(cache.overlays("/r", "a"), QStringList{QStringLiteral("emblem-syncbadge-synced")});
    }

    void aNewDaemonDropsEverythingAndObservesAgain()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r", QStringLiteral("/r"), "a", true, a);
        cache.listed("/r", {item("/r/a", "error"), item("/r/b", "unknown")});
        QCOMPARE(cache.disconnected(), (OverlayCache::Changes{{"/r", "a"}}));
        QVERIFY(cache.overlays("/r", "a").isEmpty());
        OverlayCache::Actions b;
        cache.ask("/r", QStringLiteral("/r"), "a", false, b);   // asked while down: nothing sent
        QVERIFY(b.observe.isEmpty());
        QCOMPARE(cache.connected(), (QVector<QByteArray>{"/r"}));
        QCOMPARE(cache.listed("/r", {item("/r/a", "error")}), (OverlayCache::Changes{{"/r", "a"}}));
    }

    void notFoundIsAskedAgainThenGivenUp()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r/new", QStringLiteral("/r/new"), "x", true, a);
        for (int delay : OverlayCache::retryDelays()) {
            QCOMPARE(cache.refused("/r/new", QStringLiteral("not-found")), delay);
            QVERIFY(cache.retryDue("/r/new"));
        }
        QCOMPARE(cache.refused("/r/new", QStringLiteral("not-found")), -1);
        QVERIFY(!cache.isObserved("/r/new"));
        // Its parent's observers hear of it: observed then.
        OverlayCache::Actions b;
        cache.pushItem(item("/r/new", "pending", QString(), QStringLiteral("dir")), b);
        QCOMPARE(b.observe, (QVector<QByteArray>{"/r/new"}));
    }

    void rootsComeAndGo()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r/sub", QStringLiteral("/home/u/link"), "x", true, a);
        QCOMPARE(cache.aliases("/r/sub"), QStringList{QStringLiteral("/home/u/link")});
        cache.refused("/r/sub", QStringLiteral("outside"));
        OverlayCache::Actions b;
        QVERIFY(cache.pushRoot("/r", false, true, true, b).isEmpty());
        QVERIFY(b.observe.isEmpty());                            // still scanning
        cache.pushRoot("/rx", false, false, true, b);
        QVERIFY(b.observe.isEmpty());                            // another root
        cache.pushRoot("/r", false, false, true, b);
        QCOMPARE(b.observe, (QVector<QByteArray>{"/r/sub"}));
        cache.listed("/r/sub", {item("/r/sub/x", "conflict")});
        OverlayCache::Actions c;
        QCOMPARE(cache.pushRoot("/r", true, false, true, c), (OverlayCache::Changes{{"/r/sub", "x"}}));
        QVERIFY(cache.overlays("/r/sub", "x").isEmpty());
    }

    void resetIsListedAgainOnlyWhereObserved()
    {
        OverlayCache cache;
        OverlayCache::Actions a;
        cache.ask("/r", QStringLiteral("/r"), "a", true, a);
        QVERIFY(cache.pushReset("/r"));
        QVERIFY(!cache.pushReset("/q"));
    }
};

QTEST_APPLESS_MAIN(TestCache)
#include "test_cache.moc"
