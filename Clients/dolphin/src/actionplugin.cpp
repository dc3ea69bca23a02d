#include "actionplugin.h"

#include <KFileItemListProperties>
#include <KPluginFactory>
#include <KUrlNavigator>

#include <QAction>
#include <QCoreApplication>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QTimer>

#include <memory>
#include <utility>

K_PLUGIN_CLASS_WITH_JSON(SyncBadgeActionPlugin, "syncbadge_actions.json")

using namespace SyncBadge;

namespace {
QVector<MenuEntry> entriesOf(const Reply &reply)
{
    QVector<MenuEntry> entries;
    for (const Message &line : reply.lines) {
        if (line.kind == "MENUITEM" && !line.fields.isEmpty()) {
            entries.append({line.fields[0], line.opt("title", line.arg(0)), line.opt("enabled", QStringLiteral("1")) != QLatin1String("0")});
        }
    }
    return entries;
}

QByteArray realPath(const QString &path)
{
    const QString canonical = QFileInfo(path).canonicalFilePath();
    return QFile::encodeName(canonical.isEmpty() ? path : canonical);
}

// The directory a view shows, when `url` is it: Dolphin asks for the background's menu with
// that directory as the one item, so a right-click on the background and on a folder differ
// only there.
bool isViewedDirectory(QWidget *parentWidget, const QUrl &url)
{
    if (!parentWidget) {
        return false;
    }
    const auto navigators = parentWidget->window()->findChildren<KUrlNavigator *>();
    for (const KUrlNavigator *navigator : navigators) {
        if (navigator->locationUrl().adjusted(QUrl::StripTrailingSlash) == url.adjusted(QUrl::StripTrailingSlash)) {
            return true;
        }
    }
    return false;
}
}  // namespace

ActionCore *ActionCore::instance()
{
    // Owned by the application: the plugin objects come and go with each context menu.
    static QPointer<ActionCore> core;
    if (!core) {
        core = new ActionCore();
        core->setParent(QCoreApplication::instance());
    }
    return core;
}

ActionCore::ActionCore()
    : m_conn("viewer", "dolphin", this)
{
    connect(&m_conn, &Connection::hello, this, &ActionCore::onHello);
    connect(&m_conn, &Connection::push, this, &ActionCore::onPush);
    connect(&m_conn, &Connection::closed, this, [this] {
        m_toolbars.clear();
    });
    connect(&m_conn, &Connection::attemptEnded, this, [this] {
        flushWaiting(false);
    });
    m_conn.start();
}

void ActionCore::onHello(bool newEpoch)
{
    if (newEpoch) {
        m_menus.clear();
    }
    askToolbar();
    flushWaiting(true);
}

void ActionCore::whenReady(std::function<void(bool)> f)
{
    if (m_conn.ready()) {
        f(true);
    } else {
        m_waiting.append(std::move(f));
    }
}

void ActionCore::flushWaiting(bool ready)
{
    QVector<std::function<void(bool)>> waiting;
    waiting.swap(m_waiting);
    for (const auto &f : std::as_const(waiting)) {
        f(ready);
    }
}

void ActionCore::askToolbar()
{
    m_conn.send("TOOLBAR", {}, {}, [this](const Reply &reply) {
        if (!reply.ok()) {
            return;
        }
        QVector<Toolbar> toolbars;
        for (const Message &line : reply.lines) {
            if (line.kind == "TOOLBAR") {
                toolbars.append({line.opt("name"), line.opt("tooltip"), line.rawOpt("provider")});
            }
        }
        m_toolbars = toolbars;
        debug(QStringLiteral("toolbar items: %1").arg(toolbars.size()));
    });
}

void ActionCore::onPush(const Message &m)
{
    if (m.kind == "ROOT") {
        // Engines come and go with their claims, their toolbar items with them.
        askToolbar();
    } else if (m.kind == "TOOLBAR") {
        const QByteArray provider = m.rawOpt("provider");
        for (int i = m_toolbars.size() - 1; i >= 0; --i) {
            if (m_toolbars[i].provider == provider) {
                m_toolbars.remove(i);
            }
        }
        if (m.arg(0) != QLatin1String("removed")) {
            m_toolbars.append({m.opt("name"), m.opt("tooltip"), provider});
        }
    }
}

void ActionCore::menu(const QByteArray &kind, const QVector<QByteArray> &paths, const QByteArray &target, const QByteArray &provider,
                      QObject *context, const MenuDone &done)
{
    Options options{{"target", target.isEmpty() ? QByteArray() : target}, {"provider", provider.isEmpty() ? QByteArray() : provider}};
    QVector<QByteArray> fields{kind};
    fields += paths;
    const QByteArray key = formatLine("k", "MENU", fields, options);
    const auto cached = m_menus.constFind(key);
    const bool fromCache = cached != m_menus.constEnd();
    if (fromCache) {
        done(*cached);
    }
    // After the cached answer, `done` hears nothing more: the menu is built.
    const QPointer<QObject> guard(context);
    const auto answer = [guard, done, fromCache](const std::optional<QVector<MenuEntry>> &entries) {
        if (!fromCache && guard) {
            done(entries);
        }
    };
    whenReady([this, fields, options, key, answer](bool ready) {
        const int tag = !ready ? 0 : m_conn.send("MENU", fields, options, [this, key, answer](const Reply &reply) {
            std::optional<QVector<MenuEntry>> entries;
            if (reply.ok()) {
                entries = entriesOf(reply);
            } else if (reply.final.kind != "CLOSED") {
                entries = QVector<MenuEntry>();
            }
            if (entries) {
                m_menus.insert(key, *entries);
            }
            answer(entries);
        });
        if (tag == 0) {
            answer(std::nullopt);
        }
    });
}

void ActionCore::action(const QByteArray &id, const QString &title, const QVector<QByteArray> &paths, const QByteArray &target,
                        const QByteArray &provider)
{
    QVector<QByteArray> fields{id};
    fields += paths;
    const QString summary = QStringLiteral("Sync: ") + title;
    const auto answered = [this, id, summary](const Reply &answer) {
        QString text;
        bool ok = false;
        if (answer.final.kind == "CLOSED") {
            text = QStringLiteral("the daemon went away");
        } else if (answer.ok()) {
            ok = true;
            text = answer.final.opt("message", QStringLiteral("done"));
        } else if (answer.code() == QLatin1String("timeout")) {
            text = QStringLiteral("the sync engine did not answer in time");
        } else {
            text = answer.final.opt("message");
            text = text.isEmpty() ? answer.code() : answer.code() + QStringLiteral(": ") + text;
        }
        debug(QStringLiteral("action %1 -> %2 %3").arg(QString::fromUtf8(id), ok ? QStringLiteral("OK") : QStringLiteral("ERR"), text));
        notify(summary, text, ok);
    };
    const Options options{{"target", target.isEmpty() ? QByteArray() : target}, {"provider", provider.isEmpty() ? QByteArray() : provider}};
    if (!m_conn.hasCap("action-reply")) {
        // Before 1.2: OK means the action was delivered.
        debug(QStringLiteral("action %1 sent").arg(QString::fromUtf8(id)));
        if (m_conn.send("ACTION", fields, options, answered) == 0) {
            notify(summary, QStringLiteral("no daemon answers"), false);
        }
        return;
    }
    // With action-reply the engine's own answer comes back, up to 10 s later; the daemon holds a
    // connection's later requests until then, so it is asked on a connection of its own and the
    // menus' connection stays quick.
    auto *conn = new Connection("viewer", "dolphin", this);
    conn->setOneShot(true);
    auto done = std::make_shared<bool>(false);
    const auto finish = [conn, done, answered](const Reply &answer) {
        if (*done) {
            return;
        }
        *done = true;
        answered(answer);
        conn->deleteLater();
    };
    Options withReply = options;
    withReply.append(qMakePair(QByteArray("reply"), QByteArray("1")));
    connect(conn, &Connection::hello, conn, [conn, fields, withReply, finish, id] {
        debug(QStringLiteral("action %1 sent with reply=1").arg(QString::fromUtf8(id)));
        conn->send("ACTION", fields, withReply, finish);
    });
    connect(conn, &Connection::closed, conn, [finish] {
        Reply gone;
        gone.final.kind = "CLOSED";
        finish(gone);
    });
    // The daemon answers ERR timeout after 10 s; this is for a daemon that answers nothing.
    QTimer::singleShot(15000, conn, [finish] {
        Reply late;
        late.final.kind = "ERR";
        late.final.fields = {"timeout"};
        finish(late);
    });
    conn->start();
}

void ActionCore::notify(const QString &summary, const QString &body, bool ok)
{
    // The desktop's notification server (org.freedesktop.Notifications, which KNotification
    // also ends at): it needs no event configuration file installed for Dolphin.
    QDBusMessage call = QDBusMessage::createMethodCall(QStringLiteral("org.freedesktop.Notifications"), QStringLiteral("/org/freedesktop/Notifications"),
                                                       QStringLiteral("org.freedesktop.Notifications"), QStringLiteral("Notify"));
    call << QStringLiteral("SyncBadge") << 0u << (ok ? QStringLiteral("dialog-information") : QStringLiteral("dialog-error")) << summary << body
         << QStringList() << QVariantMap() << -1;
    auto *watcher = new QDBusPendingCallWatcher(QDBusConnection::sessionBus().asyncCall(call), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [summary, body](QDBusPendingCallWatcher *w) {
        if (w->isError()) {
            log(QStringLiteral("%1: %2 (no notification: %3)").arg(summary, body, w->error().message()));
        }
        w->deleteLater();
    });
}

SyncBadgeActionPlugin::SyncBadgeActionPlugin(QObject *parent, const QVariantList &args)
    : KAbstractFileItemActionPlugin(parent)
{
    Q_UNUSED(args)
    ActionCore::instance();
}

SyncBadgeActionPlugin::~SyncBadgeActionPlugin()
{
    for (const auto &menu : std::as_const(m_menus)) {
        delete menu.data();
    }
}

QList<QAction *> SyncBadgeActionPlugin::actions(const KFileItemListProperties &fileItemInfos, QWidget *parentWidget)
{
    for (const auto &menu : std::as_const(m_menus)) {
        if (menu) {
            menu->deleteLater();
        }
    }
    m_menus.clear();
    ActionCore *core = ActionCore::instance();
    const QList<QUrl> urls = fileItemInfos.urlList();
    if (urls.isEmpty()) {
        return {};
    }
    for (const QUrl &url : urls) {
        if (!url.isLocalFile()) {
            return {};
        }
    }
    if (!core->reachable()) {
        debug(QStringLiteral("no menu for %1 paths: no daemon answers").arg(urls.size()));
        return {};
    }
    if (urls.size() == 1 && fileItemInfos.isDirectory() && isViewedDirectory(parentWidget, urls.first())) {
        // The background: the directory's own items, then each engine's toolbar item.
        const QByteArray dir = realPath(urls.first().toLocalFile());
        QStringList said;
        const QVector<Toolbar> toolbars = core->toolbars();
        for (const Toolbar &toolbar : toolbars) {
            said.append(toolbar.name);
        }
        const QString where = urls.first().toLocalFile();
        const QString tools = said.join(QLatin1String(", "));
        QList<QAction *> actions;
        QMenu *sync = submenu(QStringLiteral("Sync"), "container", {}, dir, QByteArray(), parentWidget, true,
                              [where, tools](const std::optional<QVector<MenuEntry>> &entries) {
                                  debug(QStringLiteral("background menu for %1: %2; toolbar items: %3")
                                            .arg(where, entries ? QString::number(entries->size()) + QStringLiteral(" items") : QStringLiteral("no answer"), tools));
                              });
        if (sync->menuAction()->isVisible()) {
            actions.append(sync->menuAction());
        }
        for (const Toolbar &toolbar : toolbars) {
            QMenu *menu = submenu(toolbar.name.isEmpty() ? QStringLiteral("Sync engine") : toolbar.name, "toolbar", {}, dir, toolbar.provider,
                                  parentWidget, false, {});
            menu->menuAction()->setToolTip(toolbar.tooltip);
            if (menu->menuAction()->isVisible()) {
                actions.append(menu->menuAction());
            }
        }
        return actions;
    }
    // A selection: paths by their directories' real paths, as the daemon knows them.
    QVector<QByteArray> paths;
    QSet<QByteArray> dirs;
    for (const QUrl &url : urls) {
        QString path = url.toLocalFile();
        while (path.size() > 1 && path.endsWith(QLatin1Char('/'))) {
            path.chop(1);
        }
        const int slash = path.lastIndexOf(QLatin1Char('/'));
        const QByteArray dir = realPath(slash <= 0 ? QStringLiteral("/") : path.left(slash));
        dirs.insert(dir);
        paths.append((dir == "/" ? QByteArray() : dir) + '/' + QFile::encodeName(path.mid(slash + 1)));
    }
    const QByteArray target = dirs.size() == 1 ? *dirs.begin() : QByteArray();
    const int count = paths.size();
    QMenu *sync = submenu(QStringLiteral("Sync"), "items", paths, target, QByteArray(), parentWidget, true,
                          [count](const std::optional<QVector<MenuEntry>> &entries) {
                              QStringList ids;
                              for (const MenuEntry &e : entries.value_or(QVector<MenuEntry>())) {
                                  ids.append(QString::fromUtf8(e.id));
                              }
                              debug(QStringLiteral("menu items for %1 paths: %2").arg(count).arg(entries ? ids.join(QLatin1Char(' ')) : QStringLiteral("(no answer)")));
                          });
    if (!sync->menuAction()->isVisible()) {
        return {};
    }
    return {sync->menuAction()};
}

QMenu *SyncBadgeActionPlugin::submenu(const QString &title, const QByteArray &kind, const QVector<QByteArray> &paths, const QByteArray &target,
                                      const QByteArray &provider, QWidget *parentWidget, bool hideEmpty,
                                      const std::function<void(const std::optional<QVector<MenuEntry>> &)> &said)
{
    auto *menu = new QMenu(title, parentWidget);
    menu->setIcon(QIcon::fromTheme(QStringLiteral("emblem-syncbadge-synced")));
    m_menus.append(menu);
    // Until the daemon answers (a few milliseconds on a local socket): one disabled line.
    QAction *waiting = menu->addAction(QStringLiteral("Asking syncbadged…"));
    waiting->setEnabled(false);
    if (debugEnabled()) {
        // Where the items are on the screen, for the tests to click.
        logPlace(nullptr, menu->menuAction(), title, 0);
        connect(menu, &QMenu::aboutToShow, menu, [menu] {
            for (QAction *action : menu->actions()) {
                logPlace(menu, action, action->objectName(), 0);
            }
        });
    }
    ActionCore::instance()->menu(kind, paths, target, provider, menu,
                                 [menu, waiting, paths, target, provider, hideEmpty, said](const std::optional<QVector<MenuEntry>> &entries) {
        if (said) {
            said(entries);
        }
        delete waiting;
        if (!entries || (hideEmpty && entries->isEmpty())) {
            menu->menuAction()->setVisible(false);
            return;
        }
        for (const MenuEntry &entry : *entries) {
            QAction *action = menu->addAction(entry.title);
            action->setEnabled(entry.enabled);
            action->setObjectName(QString::fromUtf8(entry.id));
            const QByteArray id = entry.id;
            const QString label = entry.title;
            connect(action, &QAction::triggered, ActionCore::instance(), [id, label, paths, target, provider] {
                ActionCore::instance()->action(id, label, paths, target, provider);
            });
            if (debugEnabled() && menu->isVisible()) {
                // Filled while on the screen: aboutToShow has been and gone.
                logPlace(menu, action, action->objectName(), 0);
            }
        }
    });
    return menu;
}
void SyncBadgeActionPlugin::logPlace(QMenu *menu, QAction *action, const QString &what, int tries)
{
    QPointer<QAction> guard(action);
    QTimer::singleShot(50, ActionCore::instance(), [menu, guard, what, tries] {
        if (!guard) {
            return;
        }
        QMenu *shown = menu;
        if (!shown) {
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
            const auto widgets = guard->associatedObjects();
#else
            const auto widgets = guard->associatedWidgets();
#endif
            for (QObject *w : widgets) {
                auto *m = qobject_cast<QMenu *>(w);
                if (m && m->isVisible()) {
                    shown = m;
                }
            }
        }
        if (!shown || !shown->isVisible()) {
            if (tries < 100) {
                logPlace(menu, guard, what, tries + 1);
            }
            return;
        }
        const QRect r = shown->actionGeometry(guard);
        const QPoint at = shown->mapToGlobal(r.topLeft());
        debug(QStringLiteral("menu item %1 at %2,%3 size %4x%5").arg(what).arg(at.x()).arg(at.y()).arg(r.width()).arg(r.height()));
    });
}

#include "actionplugin.moc"
