// Badge images as emblem icons: `make install` puts the default set into hicolor as
// emblem-syncbadge-<id>; a badge a provider defines (DEFINE-BADGE ... image=) is copied into the
// user's own hicolor here, as the GTK extension does.
#pragma once

#include <QString>

namespace SyncBadge {

// The file of the emblem icon `name` in an icon directory (the user's, then $XDG_DATA_DIRS),
// empty when none has it.
QString installedEmblem(const QString &name);
// Copies `image` (SVG: scalable; anything else: 64x64) to the user's hicolor as
// emblem-syncbadge-<id>. Returns the installed file's absolute path, empty when it failed.
QString installBadgeImage(const QString &id, const QString &image);

}  // namespace SyncBadge
