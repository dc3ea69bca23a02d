// The overlay plugin (KOverlayIconPlugin): an emblem on every file of a root. Dolphin asks
// getOverlays() on its main thread for each item it shows; the answer comes from the cache
// (overlaycache.h) at once, and every change the daemon pushes updates the cache first and then
// emits overlaysChanged for exactly the entries whose emblems changed (Dolphin asks again then).
#pragma once

#include "connection.h"
#include "overlaycache.h"

#include <KOverlayIconPlugin>

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
    void changed(const SyncBadge::OverlayCache::Changes &changes);
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
};
