#ifndef SYNCBADGE_CINOTIFYTOOLS_SHIM_H
#define SYNCBADGE_CINOTIFYTOOLS_SHIM_H
#include <inotifytools/inotifytools.h>
#include <sys/inotify.h>

// Macros built from other macros do not import into Swift; re-export them as constants.
static const unsigned int sb_IN_ALL_EVENTS = IN_ALL_EVENTS;
static const unsigned int sb_IN_ISDIR = IN_ISDIR;
static const unsigned int sb_IN_Q_OVERFLOW = IN_Q_OVERFLOW;
static const unsigned int sb_IN_IGNORED = IN_IGNORED;
static const unsigned int sb_IN_DONT_FOLLOW = IN_DONT_FOLLOW;
static const unsigned int sb_IN_EXCL_UNLINK = IN_EXCL_UNLINK;
static const unsigned int sb_IN_ONLYDIR = IN_ONLYDIR;
static const unsigned int sb_IN_UNMOUNT = IN_UNMOUNT;
static const unsigned int sb_IN_MASK_ADD = IN_MASK_ADD;

// The flexible `name` member is invisible to Swift: read it through these.
static inline const char *sb_event_name(const struct inotify_event *event) {
    return event->len > 0 ? event->name : "";
}
static inline int sb_event_wd(const struct inotify_event *event) { return event->wd; }
static inline unsigned int sb_event_mask(const struct inotify_event *event) { return event->mask; }
static inline unsigned int sb_event_cookie(const struct inotify_event *event) { return event->cookie; }
#endif
