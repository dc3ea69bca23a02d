#include "emblems.h"

#include "connection.h"
#include "wire.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QStandardPaths>

namespace SyncBadge {

namespace {
QString userIcons()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/icons/hicolor");
}
}  // namespace

bool emblemInstalled(const QString &name)
{
    const QStringList dirs = QStandardPaths::standardLocations(QStandardPaths::GenericDataLocation);
    for (const QString &dir : dirs) {
        for (const char *sub : {"/icons/hicolor/scalable/emblems/", "/icons/hicolor/64x64/emblems/"}) {
            const QString base = dir + QLatin1String(sub) + name;
            if (QFileInfo::exists(base + QStringLiteral(".svg")) || QFileInfo::exists(base + QStringLiteral(".png"))) {
                return true;
            }
        }
    }
    return false;
}

bool installBadgeImage(const QString &id, const QString &image)
{
    if (!isId(id.toUtf8()) || image.isEmpty() || !QFileInfo(image).isFile()) {
        return false;
    }
    const bool svg = image.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive);
    const QString dir = userIcons() + (svg ? QStringLiteral("/scalable/emblems") : QStringLiteral("/64x64/emblems"));
    const QString suffix = svg ? QStringLiteral(".svg") : QLatin1Char('.') + QFileInfo(image).suffix().toLower();
    const QString target = dir + QStringLiteral("/emblem-syncbadge-") + id + suffix;
    const QString temporary = target + QStringLiteral(".part");
    QFile::remove(temporary);
    if (!QDir().mkpath(dir) || !QFile::copy(image, temporary)) {
        log(QStringLiteral("cannot install the badge %1 from %2").arg(id, image));
        return false;
    }
    // Renamed into place, so that a lookup never reads half a file.
    QFile::remove(target);
    if (!QFile::rename(temporary, target)) {
        log(QStringLiteral("cannot install the badge %1 at %2").arg(id, target));
        return false;
    }
    // Qt's icon loader looks at the directories again once its theme key changes, which
    // setting the search path does (an icon it found missing before is found now).
    QIcon::setThemeSearchPaths(QIcon::themeSearchPaths());
    return true;
}

}  // namespace SyncBadge
