// One connection to syncbadged over QLocalSocket, never blocking the event loop: HELLO, requests
// with callbacks (answers come in order), pushes, reconnection with backoff (0.25 s doubling up
// to 5 s) and the daemon's epoch. Both plugins use it; each holds one for the process.
#pragma once

#include "wire.h"

#include <QHash>
#include <QLocalSocket>
#include <QObject>
#include <QSet>
#include <QTimer>

#include <functional>

namespace SyncBadge {

void log(const QString &message);       // "syncbadge: <message>" on stderr
void debug(const QString &message);     // the same, only with SYNCBADGE_DEBUG=1
bool debugEnabled();

struct Reply {
    QVector<Message> lines;   // the data lines
    Message final;            // OK or ERR; kind "CLOSED" when the connection went first
    bool ok() const { return final.kind == "OK"; }
    QString code() const { return final.kind == "CLOSED" ? QStringLiteral("closed") : final.code(); }
};
using Callback = std::function<void(const Reply &)>;
// A data line of an answer, as it arrives (the final line still goes to the Callback, with no
// lines in its Reply): a listing of 20,000 entries need not be held and taken in one go.
using LineCallback = std::function<void(const Message &)>;

class Connection : public QObject {
    Q_OBJECT
public:
    Connection(const QByteArray &role, const QByteArray &name, QObject *parent = nullptr);
    ~Connection() override;

    // Connects now and whenever the connection is lost, with backoff.
    void start();
    // For one request's sake: connects once, never again, and logs nothing (closed() is
    // emitted when it closes or cannot connect at all).
    void setOneShot(bool oneShot) { m_oneShot = oneShot; }
    bool ready() const { return m_ready; }
    QByteArray path() const { return m_path; }
    QByteArray epoch() const { return m_epoch; }
    bool hasCap(const QByteArray &cap) const { return m_caps.contains(cap); }

    // A socket is there, connecting or connected: HELLO's answer (hello()) or its loss
    // (attemptEnded()) comes.
    bool connecting() const { return m_socket != nullptr; }

    // Sends a request once HELLO was answered; returns its tag number, or 0 when not ready.
    // The answer comes to `callback` from the event loop: nothing here waits for the daemon.
    int send(const QByteArray &verb, const QVector<QByteArray> &fields, const Options &options = {}, Callback callback = {},
             LineCallback onLine = {});

Q_SIGNALS:
    // HELLO was answered; `newEpoch`: another daemon than before (or the first).
    void hello(bool newEpoch);
    void push(const SyncBadge::Message &message);
    void closed(const QString &reason);
    // The socket went, whether HELLO had been answered or not (every lost connection or failed
    // attempt; closed() only for a connection that was ready, or a one-shot's).
    void attemptEnded();

private:
    void connectNow();
    void onConnected();
    void onReadyRead();
    void onError(QLocalSocket::LocalSocketError error);
    void onDisconnected();
    void lost(const QString &reason);
    void handle(const QByteArray &line);
    void drain();

    struct Pending {
        Reply reply;
        Callback callback;
        LineCallback onLine;
    };

    QByteArray m_role;
    QByteArray m_name;
    QByteArray m_path;
    QLocalSocket *m_socket = nullptr;
    LineBuffer m_buffer;
    // m_buffer holds what was read and not handled yet: a burst (20,000 pushes of a flip) is
    // handled in slices of the event loop, so that the window is redrawn in between.
    QTimer m_drainTimer;
    QHash<int, Pending> m_pending;
    QVector<int> m_order;       // tags awaiting an answer, oldest first
    int m_nextTag = 1;
    int m_helloTag = 0;
    bool m_ready = false;
    bool m_saidDown = false;
    bool m_oneShot = false;
    QByteArray m_epoch;
    QSet<QByteArray> m_caps;
    int m_backoff = 250;
    QTimer m_retry;
    QTimer m_helloTimer;
};

}  // namespace SyncBadge
