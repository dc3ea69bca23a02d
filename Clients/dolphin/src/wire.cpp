#include "wire.h"

#include <cstdlib>
#include <unistd.h>

namespace SyncBadge {

namespace {

// The length of the valid UTF-8 sequence starting at data[i] (strict: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when none starts there.
int validSequenceLength(const unsigned char *data, int size, int i)
{
    const unsigned char b0 = data[i];
    auto cont = [&](int k) { return i + k < size && (data[i + k] & 0xC0) == 0x80; };
    if (b0 < 0x80) {
        return 1;
    }
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        return cont(1) ? 2 : 0;
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (!cont(1) || !cont(2)) {
            return 0;
        }
        const unsigned char b1 = data[i + 1];
        if (b0 == 0xE0 && b1 < 0xA0) {
            return 0;  // overlong
        }
        if (b0 == 0xED && b1 >= 0xA0) {
            return 0;  // surrogates
        }
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) {
            return 0;
        }
        const unsigned char b1 = data[i + 1];
        if (b0 == 0xF0 && b1 < 0x90) {
            return 0;  // overlong
        }
        if (b0 == 0xF4 && b1 >= 0x90) {
            return 0;  // above U+10FFFF
        }
        return 4;
    }
    return 0;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool matches(const QByteArray &value, int maxLength)
{
    if (value.isEmpty() || value.size() > maxLength) {
        return false;
    }
    for (char c : value) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

// The length of `key=` when a raw field starts with an option key ([a-z][a-z0-9-]*=), else 0.
int optionPrefix(const QByteArray &field)
{
    if (field.isEmpty() || field[0] < 'a' || field[0] > 'z') {
        return 0;
    }
    for (int i = 1; i < field.size(); ++i) {
        const char c = field[i];
        if (c == '=') {
            return i + 1;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
            return 0;
        }
    }
    return 0;
}

}  // namespace

QByteArray encodeField(const QByteArray &value)
{
    static const char hex[] = "0123456789ABCDEF";
    const auto *data = reinterpret_cast<const unsigned char *>(value.constData());
    const int size = value.size();
    QByteArray out;
    out.reserve(size);
    int i = 0;
    while (i < size) {
        const unsigned char b = data[i];
        if (b <= 0x20 || b == '%' || b == 0x7F) {
            out += '%';
            out += hex[b >> 4];
            out += hex[b & 0xF];
            ++i;
            continue;
        }
        const int n = validSequenceLength(data, size, i);
        if (n == 0) {
            out += '%';
            out += hex[b >> 4];
            out += hex[b & 0xF];
            ++i;
            continue;
        }
        out.append(value.constData() + i, n);
        i += n;
    }
    return out;
}

std::optional<QByteArray> decodeField(const QByteArray &field)
{
    if (!field.contains('%')) {
        return field;
    }
    QByteArray out;
    out.reserve(field.size());
    for (int i = 0; i < field.size(); ++i) {
        const char c = field[i];
        if (c != '%') {
            out += c;
            continue;
        }
        if (i + 2 >= field.size()) {
            return std::nullopt;
        }
        const int hi = hexValue(field[i + 1]);
        const int lo = hexValue(field[i + 2]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out += char(hi * 16 + lo);
        i += 2;
    }
    return out;
}

bool isTag(const QByteArray &value)
{
    return matches(value, 32);
}

bool isId(const QByteArray &value)
{
    return matches(value, 64);
}

QString Message::code() const
{
    return kind == "ERR" ? arg(0, QStringLiteral("internal")) : QString();
}

QString Message::arg(int index, const QString &fallback) const
{
    return index < fields.size() ? QString::fromUtf8(fields[index]) : fallback;
}

QByteArray Message::field(int index) const
{
    return index < fields.size() ? fields[index] : QByteArray();
}

bool Message::has(const QByteArray &key) const
{
    for (const auto &o : options) {
        if (o.first == key) {
            return true;
        }
    }
    return false;
}

QByteArray Message::rawOpt(const QByteArray &key) const
{
    QByteArray value;
    for (const auto &o : options) {
        if (o.first == key) {
            value = o.second;
        }
    }
    return value;
}

QString Message::opt(const QByteArray &key, const QString &fallback) const
{
    return has(key) ? QString::fromUtf8(rawOpt(key)) : fallback;
}

int Message::optInt(const QByteArray &key, int fallback) const
{
    if (!has(key)) {
        return fallback;
    }
    const QByteArray value = rawOpt(key);
    bool ok = false;
    const int n = value.toInt(&ok);
    return ok && n >= 0 && !value.startsWith('+') ? n : fallback;
}

std::optional<Message> parseMessage(const QByteArray &line)
{
    QByteArray data = line;
    if (data.endsWith('\r')) {
        data.chop(1);
    }
    const QList<QByteArray> parts = data.split(' ');
    if (parts.size() < 2 || parts[1].isEmpty() || !(parts[0] == "*" || isTag(parts[0]))) {
        return std::nullopt;
    }
    Message m;
    m.head = parts[0];
    m.kind = parts[1];
    for (int i = 2; i < parts.size(); ++i) {
        const QByteArray &part = parts[i];
        if (part.isEmpty()) {
            return std::nullopt;
        }
        const int prefix = optionPrefix(part);
        const auto value = decodeField(prefix ? part.mid(prefix) : part);
        if (!value) {
            return std::nullopt;
        }
        if (prefix) {
            m.options.append({part.left(prefix - 1), *value});
        } else {
            m.fields.append(*value);
        }
    }
    return m;
}

QByteArray formatLine(const QByteArray &head, const QByteArray &word, const QVector<QByteArray> &fields, const Options &options)
{
    QByteArray out = head + ' ' + word;
    for (const QByteArray &f : fields) {
        out += ' ';
        out += encodeField(f);
    }
    for (const auto &o : options) {
        if (o.second.isNull()) {
            continue;
        }
        out += ' ';
        out += o.first;
        out += '=';
        out += encodeField(o.second);
    }
    out += '\n';
    return out;
}

QVector<QByteArray> LineBuffer::feed(const QByteArray &data)
{
    append(data);
    QVector<QByteArray> lines;
    QByteArray line;
    while (takeLine(&line)) {
        lines.append(line);
    }
    return lines;
}

void LineBuffer::append(const QByteArray &data)
{
    // What was taken goes before more comes (one move of the rest, not one per line).
    if (m_at > 0) {
        m_pending.remove(0, m_at);
        m_at = 0;
    }
    m_pending += data;
}

bool LineBuffer::takeLine(QByteArray *line)
{
    for (;;) {
        const int lf = m_pending.indexOf('\n', m_at);
        if (lf < 0) {
            if (m_at == m_pending.size()) {
                m_pending.clear();
                m_at = 0;
            }
            return false;
        }
        int end = lf;
        if (end > m_at && m_pending[end - 1] == '\r') {
            --end;
        }
        const int start = m_at;
        m_at = lf + 1;
        if (end > start) {
            *line = m_pending.mid(start, end - start);
            return true;
        }
    }
}

QByteArray socketPath(const std::optional<QByteArray> &explicitPath, const std::function<std::optional<QByteArray>(const char *)> &env,
                      unsigned uid)
{
    if (explicitPath && !explicitPath->isEmpty()) {
        return *explicitPath;
    }
    const auto value = env("SYNCBADGE_SOCKET");
    if (value && !value->isEmpty()) {
        return *value;
    }
    const auto runtime = env("XDG_RUNTIME_DIR");
    if (runtime && runtime->startsWith('/')) {
        return *runtime + "/syncbadge/daemon.sock";
    }
    return "/tmp/syncbadge-" + QByteArray::number(uid) + "/daemon.sock";
}

QByteArray socketPath()
{
    return socketPath(
        std::nullopt,
        [](const char *name) -> std::optional<QByteArray> {
            const char *value = std::getenv(name);
            if (!value) {
                return std::nullopt;
            }
            return QByteArray(value);
        },
        unsigned(getuid()));
}

std::optional<Item> Item::fromMessage(const Message &m)
{
    if (m.kind != "ITEM" || m.fields.size() < 2 || !m.fields[0].startsWith('/')) {
        return std::nullopt;
    }
    Item item;
    item.path = m.fields[0];
    item.state = m.arg(1);
    item.badge = m.opt("badge", item.state);
    item.kind = m.opt("kind");
    item.progress = m.optInt("progress");
    item.message = m.opt("message");
    return item;
}

QString emblemFor(const Item &item)
{
    if (item.state.isEmpty() || item.state == QLatin1String("unknown") || item.state == QLatin1String("outside")
        || item.kind == QLatin1String("gone")) {
        return QString();
    }
    return QStringLiteral("emblem-syncbadge-") + (item.badge.isEmpty() ? item.state : item.badge);
}

}  // namespace SyncBadge
