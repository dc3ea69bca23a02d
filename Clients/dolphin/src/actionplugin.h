// The Sync submenu (KAbstractFileItemActionPlugin): `MENU items` for a selection, `MENU container`
// and each engine's toolbar item on the view's background. Dolphin builds its context menu on the
// main thread, so the menu comes from an answer cached for the same request (and asked again for
// next time) or waits for the daemon at most 100 ms. A click sends ACTION (with reply=1 when the
// daemon offers action-reply) and shows the answer as a desktop notification.
#pragma once

#include "connection.h"

#include <KAbstractFileItemActionPlugin>

#include <QDeadlineTimer>
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

    // A context menu is being built: from now on it may wait for the daemon MenuWait ms in all.
    // False when no daemon answers within that time.
    bool startMenu();
    // The engines' toolbar items (waiting for them within the menu's time when still asked).
    QVector<Toolbar> toolbars();
    // The MENUITEMs of a request: the cached answer to the same request at once (asking again
    // for next time), else the daemon's within MenuWait ms; nullopt without an answer.
    std::optional<QVector<MenuEntry>> menu(const QByteArray &kind, const QVector<QByteArray> &paths, const QByteArray &target,
                                           const QByteArray &provider = QByteArray());
    void action(const QByteArray &id, const QString &title, const QVector<QByteArray> &paths, const QByteArray &target,
                const QByteArray &provider = QByteArray());

private:
    ActionCore();
    void onHello(bool newEpoch);
    void onPush(const Message &m);
    void askToolbar();
    void notify(const QString &summary, const QString &body, bool ok);

    int left() const;

    Connection m_conn;
    QDeadlineTimer m_deadline;
    int m_toolbarTag = 0;
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
    QMenu *submenu(const QString &title, const QVector<SyncBadge::MenuEntry> &entries, const QVector<QByteArray> &paths,
                   const QByteArray &target, const QByteArray &provider, QWidget *parentWidget);
    static void logPlace(QMenu *menu, QAction *action, const QString &what, int tries);

    QList<QPointer<QMenu>> m_menus;  // the last menu's submenus, deleted when the next is built
};
