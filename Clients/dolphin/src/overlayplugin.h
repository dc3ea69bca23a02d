// The overlay plugin (KOverlayIconPlugin): an emblem on every file of a root. Dolphin asks
// getOverlays() on its main thread for each item it shows; the answer comes from the cache
// (overlaycache.h) at once, and every change the daemon pushes updates the cache first and then
// emits overlaysChanged for exactly the entries whose emblems changed (Dolphin asks again then),
// in slices of the event loop: Dolphin redraws an entry for each signal, and a burst of them in
// one callback would freeze the window.
#pragma once

#include "connection.h"
#include "overlaycache.h"

#include <KOverlayIconPlugin>

#include <QSet>
#include <QTimer>

class SyncBadgeOverlayPlugin : public KOverlayIconPlugin
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.syncbadge.KOverlayIconPlugin" FILE "syncbadge_overlay.json")

public:
    explicit SyncBadgeOverlayPlugin(QObject *parent = nullptr);

    QStringList getOverlays(const QUrl &item) override;

private:
    QByteArray realDir(const QString &dir);
    void run(const SyncBadge::OverlayCache::Actions &actions);
    void observe(const QByteArray &dir);
    void listedLine(const QByteArray &dir, const SyncBadge::Message &line);
    void changed(const SyncBadge::OverlayCache::Changes &changes);
    void emitChanged();
    void onHello(bool newEpoch);
    void onPush(const SyncBadge::Message &m);
    void onClosed();
    void defineBadge(const QString &id, const QString &image, bool pushed);
    QStringList icons(QStringList overlays) const;

    SyncBadge::Connection m_conn;
    SyncBadge::OverlayCache m_cache;
    QHash<QString, QByteArray> m_real;        // a directory as Dolphin shows it -> its real path
    QHash<QString, QString> m_badgeImages;    // badge id -> the image installed
    QHash<QString, QString> m_installed;      // emblem name -> the file installBadgeImage wrote
    SyncBadge::OverlayCache::Changes m_dirty; // entries to tell Dolphin about, oldest first
    int m_dirtyAt = 0;                        // m_dirty before this index are told
    QSet<QByteArray> m_dirtySet;              // dir + '/' + name of the entries in m_dirty not told yet
    QTimer m_emitTimer;
};
