// The C++ codec, line parser and builder, and socket path against Tests/Vectors/wire.tsv
// (every case of every kind, as Clients/python/tests/test_vectors.py), plus a few lines more.
#include "wire.h"

#include <QFile>
#include <QTest>

using namespace SyncBadge;

namespace {

std::optional<QByteArray> bytesCell(const QByteArray &cell)
{
    if (cell == "unset") {
        return std::nullopt;
    }
    if (cell == "-") {
        return QByteArray("");
    }
    return QByteArray::fromHex(cell);
}

struct Case {
    int line;
    QList<QByteArray> cells;
};

QVector<Case> load(const QByteArray &kind)
{
    QFile file(QStringLiteral(WIRE_TSV));
    if (!file.open(QIODevice::ReadOnly)) {
        qFatal("cannot read %s", WIRE_TSV);
    }
    QVector<Case> cases;
    int n = 0;
    while (!file.atEnd()) {
        QByteArray line = file.readLine();
        ++n;
        if (line.endsWith('\n')) {
            line.chop(1);
        }
        if (line.isEmpty() || line.startsWith('#')) {
            continue;
        }
        const QList<QByteArray> cells = line.split('\t');
        if (cells[0] == kind) {
            cases.append({n, cells.mid(1)});
        }
    }
    return cases;
}

}  // namespace

class TestWire : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void encodeVectors()
    {
        const auto cases = load("encode");
        QVERIFY(cases.size() > 256);
        for (const Case &c : cases) {
            const QByteArray in = *bytesCell(c.cells[0]);
            const QByteArray out = *bytesCell(c.cells[1]);
            const QByteArray what = "wire.tsv line " + QByteArray::number(c.line) + ": " + c.cells.value(2);
            QVERIFY2(encodeField(in) == out, what.constData());
            const auto back = decodeField(out);
            QVERIFY2(back && *back == in, what.constData());
        }
    }

    void decodeVectors()
    {
        const auto cases = load("decode");
        QVERIFY(!cases.isEmpty());
        for (const Case &c : cases) {
            const QByteArray in = *bytesCell(c.cells[0]);
            const auto got = decodeField(in);
            const QByteArray what = "wire.tsv line " + QByteArray::number(c.line) + ": " + c.cells.value(2);
            if (c.cells[1] == "error") {
                QVERIFY2(!got, what.constData());
            } else {
                QVERIFY2(got && *got == *bytesCell(c.cells[1]), what.constData());
            }
        }
    }

    void socketVectors()
    {
        const auto cases = load("socket");
        QVERIFY(!cases.isEmpty());
        for (const Case &c : cases) {
            const auto explicitPath = bytesCell(c.cells[0]);
            const auto envSocket = bytesCell(c.cells[1]);
            const auto runtime = bytesCell(c.cells[2]);
            const unsigned uid = c.cells[3].toUInt();
            const auto env = [&](const char *name) -> std::optional<QByteArray> {
                if (qstrcmp(name, "SYNCBADGE_SOCKET") == 0) {
                    return envSocket;
                }
                if (qstrcmp(name, "XDG_RUNTIME_DIR") == 0) {
                    return runtime;
                }
                return std::nullopt;
            };
            const QByteArray what = "wire.tsv line " + QByteArray::number(c.line) + ": " + c.cells.value(5);
            QVERIFY2(socketPath(explicitPath, env, uid) == *bytesCell(c.cells[4]), what.constData());
        }
    }

    void lineVectors()
    {
        const auto cases = load("line");
        QVERIFY(!cases.isEmpty());
        for (const Case &c : cases) {
            const QByteArray what = "wire.tsv line " + QByteArray::number(c.line) + ": " + c.cells.value(5);
            const QByteArray line = *bytesCell(c.cells[0]);
            QVector<QByteArray> fields;
            if (c.cells[3] != "-") {
                for (const QByteArray &cell : c.cells[3].split(',')) {
                    fields.append(*bytesCell(cell));
                }
            }
            Options options;
            if (c.cells[4] != "-") {
                for (const QByteArray &cell : c.cells[4].split(',')) {
                    const int eq = cell.indexOf('=');
                    options.append({cell.left(eq), *bytesCell(cell.mid(eq + 1))});
                }
            }
            const auto m = parseMessage(line);
            QVERIFY2(m, what.constData());
            QVERIFY2(m->head == *bytesCell(c.cells[1]), what.constData());
            QVERIFY2(m->kind == *bytesCell(c.cells[2]), what.constData());
            QVERIFY2(m->fields == fields, what.constData());
            QVERIFY2(m->options == options, what.constData());
            // Built again from its parts it reads back the same, and is the very line when that
            // had its fields before its options.
            const QByteArray built = formatLine(m->head, m->kind, fields, options);
            const auto again = parseMessage(built.left(built.size() - 1));
            QVERIFY2(again && again->fields == fields && again->options == options, what.constData());
            bool ordered = true;
            bool optionSeen = false;
            const QList<QByteArray> parts = line.split(' ');
            for (int i = 2; i < parts.size(); ++i) {
                const bool option = !parts[i].isEmpty() && parts[i][0] >= 'a' && parts[i][0] <= 'z' && parts[i].contains('=');
                ordered = ordered && !(optionSeen && !option);
                optionSeen = optionSeen || option;
            }
            if (ordered) {
                QVERIFY2(built == line + '\n', what.constData());
            }
        }
    }

    void everyFieldOfTwoBytesRoundTrips()
    {
        for (int a = 0; a < 256; ++a) {
            for (int b = 0; b < 256; ++b) {
                QByteArray in;
                in += char(a);
                in += char(b);
                const QByteArray out = encodeField(in);
                QVERIFY(!out.contains(' ') && !out.contains('\n') && !out.contains('\0'));
                QCOMPARE(*decodeField(out), in);
            }
        }
    }

    void parsesAnswersAndPushes()
    {
        const auto m = parseMessage("7 ITEM /tmp/a%20b%0A synced badge=cloud kind=file gen=3 progress=40 message=disk%20full\r");
        QVERIFY(m);
        QCOMPARE(m->head, QByteArray("7"));
        QCOMPARE(m->kind, QByteArray("ITEM"));
        QCOMPARE(m->fields, (QVector<QByteArray>{"/tmp/a b\n", "synced"}));
        QCOMPARE(m->opt("message"), QStringLiteral("disk full"));
        QCOMPARE(m->optInt("progress"), 40);
        const auto item = Item::fromMessage(*m);
        QVERIFY(item);
        QCOMPARE(item->badge, QStringLiteral("cloud"));
        QCOMPARE(emblemFor(*item), QStringLiteral("emblem-syncbadge-cloud"));
        const auto push = parseMessage("* GONE /tmp/x");
        QVERIFY(push && push->isPush() && !push->isFinal());
        const auto err = parseMessage("12 ERR not-found message=/tmp/x");
        QVERIFY(err && err->isFinal() && !err->ok());
        QCOMPARE(err->code(), QStringLiteral("not-found"));
        QVERIFY(!parseMessage("ba!d OK"));
        QVERIFY(!parseMessage("1 OK a  b"));       // an empty field
        QVERIFY(!parseMessage("1 ITEM /a%zz"));    // a malformed escape
        QVERIFY(!parseMessage("1"));
    }

    void emblems()
    {
        Item item;
        item.path = "/r/a";
        for (const char *state : {"unknown", "outside"}) {
            item.state = QString::fromLatin1(state);
            item.badge = item.state;
            QVERIFY(emblemFor(item).isEmpty());
        }
        item.state = QStringLiteral("pending");
        item.badge = QStringLiteral("pending");
        item.kind = QStringLiteral("gone");
        QVERIFY(emblemFor(item).isEmpty());
        item.kind = QStringLiteral("file");
        QCOMPARE(emblemFor(item), QStringLiteral("emblem-syncbadge-pending"));
    }

    void formatsLines()
    {
        QCOMPARE(formatLine("3", "ACTION", {"syncbadge.details", "/tmp/a b"}, {{"target", "/tmp"}, {"provider", QByteArray()}, {"reply", "1"}}),
                 QByteArray("3 ACTION syncbadge.details /tmp/a%20b target=/tmp reply=1\n"));
        QCOMPARE(formatLine("1", "HELLO", {}, {{"proto", "1"}, {"name", "d\xc3\xa9 x"}}), QByteArray("1 HELLO proto=1 name=d\xc3\xa9%20x\n"));
    }

    void splitsLines()
    {
        LineBuffer buffer;
        QCOMPARE(buffer.feed("1 OK\r\n\n2 I"), (QVector<QByteArray>{"1 OK"}));
        QCOMPARE(buffer.pendingSize(), 3);
        QCOMPARE(buffer.feed("TEM /a\n"), (QVector<QByteArray>{"2 ITEM /a"}));
        QCOMPARE(buffer.pendingSize(), 0);
    }
};

QTEST_APPLESS_MAIN(TestWire)
#include "test_wire.moc"
