// The Sync submenu (KAbstractFileItemActionPlugin): `MENU items` for a selection, `MENU container`
// and each engine's toolbar item on the view's background. Dolphin builds its context menu on the
// main thread, which must never wait for the daemon: a submenu is filled from the answer cached for
// the same request (asked again for next time), else when the daemon's answer arrives, and hidden
// when that brings no item. A click sends ACTION (with reply=1 when the
// daemon offers action-reply) and shows the answer as a desktop notification.
#pragma once

#include "connection.h"

#include <KAbstractFileItemActionPlugin>

#include <QPointer>

class QMenu;

namespace SyncBadge {

struct MenuEntry {
    QByteArray id;
    QString title;
    bool enabled = true;
};

struct Toolbar {
    QString name;
    QString tooltip;
    QByteArray provider;
};

// The process-wide half: one connection, the cached menus and the engines' toolbar items.
class ActionCore : public QObject {
    Q_OBJECT
public:
    static ActionCore *instance();

    using MenuDone = std::function<void(const std::optional<QVector<MenuEntry>> &)>;

    // Whether a menu can be asked for now: connected, or a connection attempt under way (the
    // plugin is loaded with the first context menu, which has to wait for HELLO).
    bool reachable() const { return m_conn.ready() || m_conn.connecting(); }
    // The engines' toolbar items as last answered or pushed.
    QVector<Toolbar> toolbars() const { return m_toolbars; }
    // The MENUITEMs of a request, never waiting: `done` gets the answer cached for the same
    // request at once (and the daemon is asked again for next time), else the daemon's answer
    // when it comes from the event loop (after HELLO when the connection is still coming up),
    // nullopt when none will. Not called once `context` is gone.
    void menu(const QByteArray &kind, const QVector<QByteArray> &paths, const QByteArray &target, const QByteArray &provider,
              QObject *context, const MenuDone &done);
    void action(const QByteArray &id, const QString &title, const QVector<QByteArray> &paths, const QByteArray &target,
                const QByteArray &provider = QByteArray());

private:
    ActionCore();
    void onHello(bool newEpoch);
    void onPush(const Message &m);
    void askToolbar();
    // Runs `f(true)` once HELLO is answered (now when it was), `f(false)` when the attempt ends
    // without it.
    void whenReady(std::function<void(bool)> f);
    void flushWaiting(bool ready);
    void notify(const QString &summary, const QString &body, bool ok);

    Connection m_conn;
    QVector<std::function<void(bool)>> m_waiting;
    QHash<QByteArray, QVector<MenuEntry>> m_menus;  // request line -> its answer
    QVector<Toolbar> m_toolbars;
};

}  // namespace SyncBadge

class SyncBadgeActionPlugin : public KAbstractFileItemActionPlugin
{
    Q_OBJECT
public:
    SyncBadgeActionPlugin(QObject *parent, const QVariantList &args);
    ~SyncBadgeActionPlugin() override;

    QList<QAction *> actions(const KFileItemListProperties &fileItemInfos, QWidget *parentWidget) override;

private:
    // A submenu whose items come with the daemon's answer to its MENU request: filled at once
    // from the cache, else when the answer arrives (hidden when it brings none). `said` is
    // called with the answer, for the debug log the tests read.
    QMenu *submenu(const QString &title, const QByteArray &kind, const QVector<QByteArray> &paths, const QByteArray &target,
                   const QByteArray &provider, QWidget *parentWidget, bool hideEmpty,
                   const std::function<void(const std::optional<QVector<SyncBadge::MenuEntry>> &)> &said);
    static void logPlace(QMenu *menu, QAction *action, const QString &what, int tries);

    QList<QPointer<QMenu>> m_menus;  // the last menu's submenus, deleted when the next is built
};
