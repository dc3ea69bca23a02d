// The wire format of PROTOCOL.md ("Framing", "Transport") in C++: fields, lines, the socket
// path. Byte for byte the daemon's (Sources/SyncBadgeProtocol/PercentEncoding.swift,
// Sources/SyncBadgeCore/SocketPath.swift) and Clients/python's; Tests/Vectors/wire.tsv holds
// the cases (tests/test_wire.cpp reads it).
// Pure functions over QByteArray: no I/O, no Qt event loop, so both plugins and the tests share it.
#pragma once

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QString>
#include <QVector>

#include <functional>
#include <optional>

namespace SyncBadge {

// Percent-encodes one field: 0x00-0x20, '%', 0x7F and every byte outside a valid UTF-8
// sequence become %XX (upper-case hex).
QByteArray encodeField(const QByteArray &value);
// %XX in either case for any byte; nullopt on a malformed escape.
std::optional<QByteArray> decodeField(const QByteArray &field);

bool isTag(const QByteArray &value);
bool isId(const QByteArray &value);

// A line a client receives: `<tag> <KIND> ...` or a push `* <EVENT> ...`.
struct Message {
    QByteArray head;                                 // a tag, or "*"
    QByteArray kind;                                 // OK, ERR, ITEM, MENUITEM...
    QVector<QByteArray> fields;                      // positional, decoded
    QVector<QPair<QByteArray, QByteArray>> options;  // key=value, decoded, in line order

    bool isPush() const { return head == "*"; }
    bool isFinal() const { return !isPush() && (kind == "OK" || kind == "ERR"); }
    bool ok() const { return kind == "OK"; }
    QString code() const;                            // an ERR's code, else empty
    QString arg(int index, const QString &fallback = QString()) const;
    QByteArray field(int index) const;               // raw bytes, empty when absent
    bool has(const QByteArray &key) const;
    QString opt(const QByteArray &key, const QString &fallback = QString()) const;
    QByteArray rawOpt(const QByteArray &key) const;  // the last one of that key, bytes
    int optInt(const QByteArray &key, int fallback = -1) const;
};

// Parses a received line without its LF (one trailing CR dropped); nullopt when malformed.
std::optional<Message> parseMessage(const QByteArray &line);

using Options = QVector<QPair<QByteArray, QByteArray>>;
// One line to send, with its LF: head and word as they are, each field and option value
// encoded. An option with a null (not empty) value is left out.
QByteArray formatLine(const QByteArray &head, const QByteArray &word, const QVector<QByteArray> &fields,
                      const Options &options = {});

// Splits a byte stream into lines: LF ends one, a CR before it goes, empty lines are skipped.
// feed() takes every whole line at once; append() and takeLine() one at a time, so that a
// megabyte read in one go is not split into 10,000 lines in one go.
class LineBuffer {
public:
    QVector<QByteArray> feed(const QByteArray &data);
    void append(const QByteArray &data);
    // The next whole line into *line; false when there is none (yet).
    bool takeLine(QByteArray *line);
    void clear()
    {
        m_pending.clear();
        m_at = 0;
    }
    // Bytes held and not taken as lines yet.
    int pendingSize() const { return m_pending.size() - m_at; }

private:
    QByteArray m_pending;
    int m_at = 0;   // m_pending before this offset is taken
};

// The socket path (PROTOCOL.md "Transport"): the explicit path unless empty, $SYNCBADGE_SOCKET
// unless empty, $XDG_RUNTIME_DIR/syncbadge/daemon.sock when absolute, /tmp/syncbadge-$UID/daemon.sock.
// `env` returns a variable's value, nullopt when unset.
QByteArray socketPath(const std::optional<QByteArray> &explicitPath,
                      const std::function<std::optional<QByteArray>(const char *)> &env, unsigned uid);
// The same from this process's environment and uid.
QByteArray socketPath();

// What an ITEM line says (the fields a badge needs).
struct Item {
    QByteArray path;
    QString state;
    QString badge;
    QString kind;
    int progress = -1;
    QString message;

    static std::optional<Item> fromMessage(const Message &m);
    bool sameLook(const Item &o) const {
        return state == o.state && badge == o.badge && kind == o.kind && progress == o.progress && message == o.message;
    }
};

// The emblem icon name of an item: emblem-syncbadge-<badge>; empty for unknown, outside or gone.
QString emblemFor(const Item &item);

}  // namespace SyncBadge
