#include "connection.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>

#include <cstdio>
#include <cstdlib>

namespace SyncBadge {

namespace {
constexpr int BackoffFirst = 250;
constexpr int BackoffMax = 5000;
constexpr int HelloWait = 2000;
// How long lines are handled before the event loop gets a turn (a frame is 16 ms; the overlay
// plugin's redraws may run in the same turn).
constexpr qint64 SliceNs = 3 * 1000 * 1000;
// What Qt reads ahead of the lines handled: the rest stays in the kernel's buffer, where the
// daemon sees that this viewer is behind and coalesces its pushes (or resets) as the contract says.
constexpr qint64 ReadAhead = 256 * 1024;
}  // namespace

bool debugEnabled()
{
    static const bool on = [] {
        const char *value = std::getenv("SYNCBADGE_DEBUG");
        return value && *value && QByteArray(value) != "0";
    }();
    return on;
}

void log(const QString &message)
{
    const QByteArray line = "syncbadge: " + message.toUtf8() + "\n";
    std::fwrite(line.constData(), 1, size_t(line.size()), stderr);
    std::fflush(stderr);
}

void debug(const QString &message)
{
    if (debugEnabled()) {
        log(message);
    }
}

Connection::Connection(const QByteArray &role, const QByteArray &name, QObject *parent)
    : QObject(parent)
    , m_role(role)
    , m_name(name)
{
    m_retry.setSingleShot(true);
    connect(&m_retry, &QTimer::timeout, this, &Connection::connectNow);
    m_drainTimer.setSingleShot(true);
    m_drainTimer.setInterval(0);
    connect(&m_drainTimer, &QTimer::timeout, this, &Connection::drain);
    m_helloTimer.setSingleShot(true);
    connect(&m_helloTimer, &QTimer::timeout, this, [this] {
        if (m_socket && !m_ready) {
            lost(QStringLiteral("the daemon did not answer HELLO within %1 s").arg(HelloWait / 1000));
        }
    });
}

Connection::~Connection()
{
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
    }
}

void Connection::start()
{
    if (!m_socket && !m_retry.isActive()) {
        connectNow();
    }
}

void Connection::connectNow()
{
    if (m_socket) {
        return;
    }
    m_path = socketPath();
    m_socket = new QLocalSocket(this);
    m_socket->setReadBufferSize(ReadAhead);
    connect(m_socket, &QLocalSocket::connected, this, &Connection::onConnected);
    connect(m_socket, &QLocalSocket::readyRead, this, &Connection::onReadyRead);
    connect(m_socket, &QLocalSocket::errorOccurred, this, &Connection::onError);
    connect(m_socket, &QLocalSocket::disconnected, this, &Connection::onDisconnected);
    m_socket->connectToServer(QFile::decodeName(m_path));
}

void Connection::onConnected()
{
    m_buffer.clear();
    m_helloTag = m_nextTag++;
    m_pending.insert(m_helloTag, Pending());
    m_order.append(m_helloTag);
    m_socket->write(formatLine(QByteArray::number(m_helloTag), "HELLO", {},
                               {{"proto", "1"}, {"role", m_role}, {"name", m_name}}));
    m_helloTimer.start(HelloWait);
}

void Connection::onError(QLocalSocket::LocalSocketError error)
{
    if (error == QLocalSocket::PeerClosedError) {
        return;  // disconnected() follows
    }
    // Qt's own text for a missing socket is "Invalid name"; say what happened instead.
    QString reason;
    switch (error) {
    case QLocalSocket::ServerNotFoundError:
        reason = QStringLiteral("no such socket");
        break;
    case QLocalSocket::ConnectionRefusedError:
        reason = QStringLiteral("connection refused");
        break;
    case QLocalSocket::SocketAccessError:
        reason = QStringLiteral("permission denied");
        break;
    default:
        reason = m_socket ? m_socket->errorString() : QStringLiteral("error %1").arg(int(error));
    }
    lost(reason);
}

void Connection::onDisconnected()
{
    // What the daemon said before it closed is handled first, as it was read.
    QByteArray line;
    while (m_socket && m_buffer.takeLine(&line)) {
        handle(line);
    }
    lost(QStringLiteral("the daemon closed the connection"));
}

void Connection::lost(const QString &reason)
{
    if (!m_socket) {
        return;
    }
    QLocalSocket *socket = m_socket;
    m_socket = nullptr;
    socket->disconnect(this);
    socket->abort();
    socket->deleteLater();
    m_helloTimer.stop();
    const bool wasReady = m_ready;
    m_ready = false;
    m_buffer.clear();
    m_drainTimer.stop();
    // Every request still waiting learns that no answer comes.
    const QVector<int> order = m_order;
    QHash<int, Pending> pending;
    pending.swap(m_pending);
    m_order.clear();
    for (int tag : order) {
        Pending p = pending.value(tag);
        p.reply.final.kind = "CLOSED";
        if (p.callback) {
            p.callback(p.reply);
        }
    }
    Q_EMIT attemptEnded();
    if (m_oneShot) {
        Q_EMIT closed(reason);
        return;
    }
    if (!m_saidDown) {
        m_saidDown = true;
        if (wasReady) {
            log(QStringLiteral("disconnected (%1): no badges until the daemon is back").arg(reason));
        } else {
            log(QStringLiteral("no daemon at %1 (%2): no badges until one starts").arg(QFile::decodeName(m_path), reason));
        }
    }
    if (wasReady) {
        Q_EMIT closed(reason);
    }
    m_retry.start(m_backoff);
    m_backoff = qMin(m_backoff * 2, BackoffMax);
}

void Connection::onReadyRead()
{
    // While lines wait for the next slice, drain() reads on when it runs dry.
    if (m_socket && !m_drainTimer.isActive()) {
        drain();
    }
}

void Connection::drain()
{
    // Lines are handled one by one, in order: a handler may send (and so write to) the socket, or
    // the connection may be lost while handling one (lost() drops the rest). More is read only
    // as the lines are handled (at most ReadAhead at a time).
    QElapsedTimer slice;
    slice.start();
    QByteArray line;
    while (m_socket) {
        if (!m_buffer.takeLine(&line)) {
            const QByteArray data = m_socket->bytesAvailable() > 0 ? m_socket->readAll() : QByteArray();
            if (data.isEmpty()) {
                return;
            }
            m_buffer.append(data);
            continue;
        }
        handle(line);
        if (slice.nsecsElapsed() >= SliceNs) {
            // The rest in the next turn of the event loop (a line may be there, or not yet).
            if (m_socket) {
                m_drainTimer.start();
            }
            return;
        }
    }
}

void Connection::handle(const QByteArray &line)
{
    const auto parsed = parseMessage(line);
    if (!parsed) {
        debug(QStringLiteral("ignored a malformed line: %1").arg(QString::fromUtf8(line.left(200))));
        return;
    }
    const Message &m = *parsed;
    if (m.isPush()) {
        if (m.kind == "BYE") {
            debug(QStringLiteral("the daemon says goodbye: %1").arg(m.arg(0)));
        }
        Q_EMIT push(m);
        return;
    }
    bool ok = false;
    const int tag = m.head.toInt(&ok);
    auto it = m_pending.find(tag);
    if (!ok || it == m_pending.end()) {
        debug(QStringLiteral("an answer to no request: %1").arg(QString::fromUtf8(line.left(200))));
        return;
    }
    if (!m.isFinal()) {
        if (it->onLine) {
            const LineCallback onLine = it->onLine;   // it may send, and so change m_pending
            onLine(m);
        } else {
            it->reply.lines.append(m);
        }
        return;
    }
    Pending p = *it;
    m_pending.erase(it);
    m_order.removeOne(tag);
    p.reply.final = m;
    if (tag == m_helloTag) {
        m_helloTimer.stop();
        if (!m.ok()) {
            lost(QStringLiteral("HELLO refused: %1").arg(m.code()));
            return;
        }
        const QByteArray epoch = m.rawOpt("epoch");
        const bool newEpoch = epoch != m_epoch;
        m_epoch = epoch;
        m_caps.clear();
        for (const QByteArray &cap : m.rawOpt("caps").split(',')) {
            if (!cap.isEmpty()) {
                m_caps.insert(cap);
            }
        }
        m_ready = true;
        m_saidDown = false;
        m_backoff = BackoffFirst;
        if (!m_oneShot) {
            log(QStringLiteral("connected to %1 at %2 (epoch %3)")
                    .arg(m.opt("server"), QFile::decodeName(m_path), QString::fromUtf8(epoch)));
        }
        Q_EMIT hello(newEpoch);
        return;
    }
    if (p.callback) {
        p.callback(p.reply);
    }
}

int Connection::send(const QByteArray &verb, const QVector<QByteArray> &fields, const Options &options, Callback callback,
                     LineCallback onLine)
{
    if (!m_ready || !m_socket) {
        return 0;
    }
    const int tag = m_nextTag++;
    Pending p;
    p.callback = std::move(callback);
    p.onLine = std::move(onLine);
    m_pending.insert(tag, p);
    m_order.append(tag);
    m_socket->write(formatLine(QByteArray::number(tag), verb, fields, options));
    return tag;
}

}  // namespace SyncBadge
