// Badge images as emblem icons: `make install` puts the default set into hicolor as
// emblem-syncbadge-<id>; a badge a provider defines (DEFINE-BADGE ... image=) is copied into the
// user's own hicolor here, as the GTK extension does.
#pragma once

#include <QString>

namespace SyncBadge {

// Whether an icon directory (the user's, then $XDG_DATA_DIRS) has the emblem icon `name`.
bool emblemInstalled(const QString &name);
// Copies `image` (SVG: scalable; anything else: 64x64) to the user's hicolor as
// emblem-syncbadge-<id> and makes Qt look at the icon directories again. True when in place.
bool installBadgeImage(const QString &id, const QString &image);

}  // namespace SyncBadge
