#include "overlaycache.h"

#include <utility>

namespace SyncBadge {

OverlayCache::OverlayCache(int maxDirs)
    : m_maxDirs(maxDirs)
{
}

const QVector<int> &OverlayCache::retryDelays()
{
    static const QVector<int> delays{250, 1000, 3000};
    return delays;
}

QByteArray OverlayCache::parentOf(const QByteArray &path, QByteArray *name)
{
    const int slash = path.lastIndexOf('/');
    if (name) {
        *name = path.mid(slash + 1);
    }
    return slash <= 0 ? QByteArray("/") : path.left(slash);
}

bool OverlayCache::under(const QByteArray &path, const QByteArray &root)
{
    if (path == root) {
        return true;
    }
    QByteArray prefix = root;
    if (!prefix.endsWith('/')) {
        prefix += '/';
    }
    return path.startsWith(prefix);
}

void OverlayCache::touch(const QByteArray &dir)
{
    const int at = m_order.indexOf(dir);
    if (at >= 0) {
        m_order.remove(at);
    }
    m_order.append(dir);
}

QStringList OverlayCache::overlays(const QByteArray &dir, const QByteArray &name) const
{
    const auto d = m_dirs.constFind(dir);
    if (d == m_dirs.constEnd()) {
        return {};
    }
    const auto entry = d->items.constFind(name);
    if (entry == d->items.constEnd()) {
        return {};
    }
    const QString emblem = emblemFor(entry->item);
    return emblem.isEmpty() ? QStringList() : QStringList{emblem};
}

QStringList OverlayCache::ask(const QByteArray &dir, const QString &alias, const QByteArray &name, bool ready, Actions &actions)
{
    auto d = m_dirs.find(dir);
    if (d == m_dirs.end()) {
        Dir fresh;
        // Evicted while Dolphin may still show it: what Dolphin drew from us then must be
        // redrawn when the listing says otherwise, though Dolphin has not asked about it again.
        fresh.shown = m_shownBefore.take(dir);
        d = m_dirs.insert(dir, fresh);
        m_order.append(dir);
        while (m_order.size() > m_maxDirs) {
            const QByteArray old = m_order.takeFirst();
            const Dir gone = m_dirs.take(old);
            if (gone.asked && !gone.outside) {
                actions.unobserve.append(old);
            }
            if (!gone.shown.isEmpty()) {
                if (m_shownBefore.size() >= 4 * m_maxDirs) {
                    m_shownBefore.clear();   // bounded: past that, a directory is long out of view
                }
                m_shownBefore.insert(old, gone.shown);
            }
        }
        d = m_dirs.find(dir);
    } else if (m_order.last() != dir) {
        touch(dir);
    }
    d->aliases.insert(alias);
    d->shown.insert(name);
    if (ready && !d->asked) {
        d->asked = true;
        actions.observe.append(dir);
    }
    return overlays(dir, name);
}

OverlayCache::Changes OverlayCache::listed(const QByteArray &dir, const QVector<Item> &items)
{
    listingStarts(dir);
    Changes changes;
    for (const Item &item : items) {
        changes += listedItem(dir, item);
    }
    changes += listingEnds(dir);
    return changes;
}

void OverlayCache::listingStarts(const QByteArray &dir)
{
    auto d = m_dirs.find(dir);
    if (d != m_dirs.end()) {
        ++d->listing;
    }
}

OverlayCache::Changes OverlayCache::listedItem(const QByteArray &dir, const Item &item)
{
    Changes changes;
    auto d = m_dirs.find(dir);
    QByteArray name;
    if (d == m_dirs.end() || parentOf(item.path, &name) != dir) {
        return changes;
    }
    auto old = d->items.find(name);
    if (old == d->items.end()) {
        if (!emblemFor(item).isEmpty() && d->shown.contains(name)) {
            changes.append({dir, name});
        }
        d->items.insert(name, Entry{item, d->listing});
        return changes;
    }
    if (emblemFor(old->item) != emblemFor(item) && d->shown.contains(name)) {
        changes.append({dir, name});
    }
    old->item = item;
    old->listing = d->listing;
    return changes;
}

OverlayCache::Changes OverlayCache::listingEnds(const QByteArray &dir)
{
    Changes changes;
    auto d = m_dirs.find(dir);
    if (d == m_dirs.end()) {
        return changes;
    }
    for (auto it = d->items.begin(); it != d->items.end();) {
        if (it->listing == d->listing) {
            ++it;
            continue;
        }
        if (!emblemFor(it->item).isEmpty() && d->shown.contains(it.key())) {
            changes.append({dir, it.key()});
        }
        it = d->items.erase(it);
    }
    d->listed = true;
    d->outside = false;
    d->retries = 0;
    return changes;
}

int OverlayCache::refused(const QByteArray &dir, const QString &code)
{
    auto d = m_dirs.find(dir);
    if (d == m_dirs.end()) {
        return -1;
    }
    d->outside = true;
    d->listed = false;
    d->items.clear();
    if (code == QLatin1String("not-found") && d->retries < retryDelays().size()) {
        return retryDelays()[d->retries++];
    }
    return -1;
}

bool OverlayCache::retryDue(const QByteArray &dir)
{
    auto d = m_dirs.find(dir);
    if (d == m_dirs.end() || !d->outside) {
        return false;
    }
    d->outside = false;
    d->asked = true;
    return true;
}

OverlayCache::Changes OverlayCache::pushItem(const Item &item, Actions &actions)
{
    Changes changes;
    // A directory Dolphin asked about before the daemon had indexed it: now it has.
    auto known = m_dirs.find(item.path);
    if (known != m_dirs.end() && known->outside && item.kind == QLatin1String("dir")) {
        known->outside = false;
        known->asked = true;
        actions.observe.append(item.path);
    }
    QByteArray name;
    const QByteArray dir = parentOf(item.path, &name);
    auto d = m_dirs.find(dir);
    if (d == m_dirs.end() || !d->listed) {
        return changes;
    }
    auto old = d->items.find(name);
    const bool differs = old == d->items.end() ? !emblemFor(item).isEmpty() : emblemFor(old->item) != emblemFor(item);
    if (old == d->items.end()) {
        // Named by no listing: a listing under way is a later picture, in which it is gone.
        d->items.insert(name, Entry{item, 0});
    } else {
        old->item = item;   // in place: a flip of 20,000 entries allocates no node
    }
    if (differs && d->shown.contains(name)) {
        changes.append({dir, name});
    }
    return changes;
}

OverlayCache::Changes OverlayCache::pushGone(const QByteArray &path)
{
    Changes changes;
    QByteArray name;
    const QByteArray dir = parentOf(path, &name);
    auto d = m_dirs.find(dir);
    if (d != m_dirs.end()) {
        const auto old = d->items.constFind(name);
        if (old != d->items.constEnd()) {
            if (!emblemFor(old->item).isEmpty() && d->shown.contains(name)) {
                changes.append({dir, name});
            }
            d->items.erase(old);
        }
    }
    // The observation ended with the directory: a directory made again under that name is
    // observed when Dolphin asks about it.
    if (m_dirs.remove(path)) {
        m_order.removeAll(path);
    }
    return changes;
}

bool OverlayCache::pushReset(const QByteArray &dir) const
{
    const auto d = m_dirs.constFind(dir);
    return d != m_dirs.constEnd() && d->asked && !d->outside;
}

OverlayCache::Changes OverlayCache::pushRoot(const QByteArray &root, bool removed, bool scanning, bool ready, Actions &actions)
{
    Changes changes;
    for (auto d = m_dirs.begin(); d != m_dirs.end(); ++d) {
        if (!under(d.key(), root)) {
            continue;
        }
        if (removed) {
            for (auto it = d->items.constBegin(); it != d->items.constEnd(); ++it) {
                if (!emblemFor(it->item).isEmpty() && d->shown.contains(it.key())) {
                    changes.append({d.key(), it.key()});
                }
            }
            d->items.clear();
            d->listed = false;
            d->outside = true;
        } else if (d->outside && !scanning && ready) {
            d->outside = false;
            d->asked = true;
            d->retries = 0;
            actions.observe.append(d.key());
        }
    }
    return changes;
}

QVector<QByteArray> OverlayCache::connected()
{
    QVector<QByteArray> observe;
    for (const QByteArray &dir : std::as_const(m_order)) {
        Dir &d = m_dirs[dir];
        d.items.clear();
        d.listed = false;
        d.outside = false;
        d.retries = 0;
        d.asked = true;
        observe.append(dir);
    }
    return observe;
}

OverlayCache::Changes OverlayCache::disconnected()
{
    Changes changes;
    for (auto d = m_dirs.begin(); d != m_dirs.end(); ++d) {
        for (auto it = d->items.constBegin(); it != d->items.constEnd(); ++it) {
            if (!emblemFor(it->item).isEmpty() && d->shown.contains(it.key())) {
                changes.append({d.key(), it.key()});
            }
        }
        d->items.clear();
        d->listed = false;
        d->asked = false;
    }
    return changes;
}

OverlayCache::Changes OverlayCache::showing(const QString &badge) const
{
    Changes changes;
    for (auto d = m_dirs.constBegin(); d != m_dirs.constEnd(); ++d) {
        for (auto it = d->items.constBegin(); it != d->items.constEnd(); ++it) {
            if (it->item.badge == badge && !emblemFor(it->item).isEmpty() && d->shown.contains(it.key())) {
                changes.append({d.key(), it.key()});
            }
        }
    }
    return changes;
}

QStringList OverlayCache::aliases(const QByteArray &dir) const
{
    const auto d = m_dirs.constFind(dir);
    return d == m_dirs.constEnd() ? QStringList() : QStringList(d->aliases.values());
}

bool OverlayCache::isObserved(const QByteArray &dir) const
{
    const auto d = m_dirs.constFind(dir);
    return d != m_dirs.constEnd() && d->asked && !d->outside;
}

}  // namespace SyncBadge
