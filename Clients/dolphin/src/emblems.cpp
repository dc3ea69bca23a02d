#include "emblems.h"

#include "connection.h"
#include "wire.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

namespace SyncBadge {

namespace {
QString userIcons()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/icons/hicolor");
}
}  // namespace

QString installedEmblem(const QString &name)
{
    const QStringList dirs = QStandardPaths::standardLocations(QStandardPaths::GenericDataLocation);
    for (const QString &dir : dirs) {
        for (const char *sub : {"/icons/hicolor/scalable/emblems/", "/icons/hicolor/64x64/emblems/"}) {
            const QString base = dir + QLatin1String(sub) + name;
            for (const char *suffix : {".svg", ".png"}) {
                const QString file = base + QLatin1String(suffix);
                if (QFileInfo::exists(file)) {
                    return file;
                }
            }
        }
    }
    return QString();
}

QString installBadgeImage(const QString &id, const QString &image)
{
    if (!isId(id.toUtf8()) || image.isEmpty() || !QFileInfo(image).isFile()) {
        return QString();
    }
    const bool svg = image.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive);
    const QString dir = userIcons() + (svg ? QStringLiteral("/scalable/emblems") : QStringLiteral("/64x64/emblems"));
    const QString suffix = svg ? QStringLiteral(".svg") : QLatin1Char('.') + QFileInfo(image).suffix().toLower();
    const QString target = dir + QStringLiteral("/emblem-syncbadge-") + id + suffix;
    const QString temporary = target + QStringLiteral(".part");
    QFile::remove(temporary);
    if (!QDir().mkpath(dir) || !QFile::copy(image, temporary)) {
        log(QStringLiteral("cannot install the badge %1 from %2").arg(id, image));
        return QString();
    }
    // Renamed into place, so that a lookup never reads half a file.
    QFile::remove(target);
    if (!QFile::rename(temporary, target)) {
        log(QStringLiteral("cannot install the badge %1 at %2").arg(id, target));
        return QString();
    }
    return target;
}

}  // namespace SyncBadge
