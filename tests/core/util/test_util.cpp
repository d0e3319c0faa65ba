// The util floor's byte-level helpers against independent references: SHA-256 (both the SHA-NI
// and the portable rounds) against Qt's QCryptographicHash, and the fast JSON writer against
// nlohmann's own dump() on edge cases, random documents and the bundled dataset's rows; the heap
// setting for large transient buffers against glibc's own accounting (mallinfo2); staged folders
// (whole or not at all) against the file system's view of the target after each step.
#include "util/error.h"
#include "util/file_util.h"
#include "util/heap.h"
#include "util/json_depth.h"
#include "util/json_write.h"
#include "util/sha256.h"
#include "util/staged_folder.h"

#include <QCryptographicHash>
#include <QtTest>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

using nlohmann::json;

namespace {

std::string qtSha256(const std::string& bytes)
{
    return QCryptographicHash::hash(QByteArray(bytes.data(), qsizetype(bytes.size())),
                                    QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

std::string randomBytes(std::mt19937_64& rng, size_t n)
{
    std::string s(n, '\0');
    for (char& c : s)
        c = static_cast<char>(rng() & 0xFF);
    return s;
}

// A random string of the characters that matter to an escaper: every control character, the
// quote, the backslash, '/', DEL, and 2-, 3- and 4-byte UTF-8 characters among plain ASCII.
std::string randomText(std::mt19937_64& rng)
{
    static const char* pieces[] = {"a",
                                   "Z",
                                   " ",
                                   "/",
                                   "\x7f",
                                   "\"",
                                   "\\",
                                   "\xc3\xa9",
                                   "\xe4\xb8\xad",
                                   "\xf0\x9f\x98\x80",
                                   "\xef\xbf\xbf",
                                   "\n",
                                   "\t",
                                   "\r",
                                   "\b",
                                   "\f"};
    std::string s;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) {
        if (rng() % 5 == 0)
            s.push_back(static_cast<char>(rng() % 0x20));  // any C0 control, NUL included
        else
            s += pieces[rng() % (sizeof pieces / sizeof *pieces)];
    }
    return s;
}

json randomValue(std::mt19937_64& rng, int depth)
{
    switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0:
        return randomText(rng);
    case 1:
        return static_cast<int64_t>(rng());
    case 2:
        return static_cast<uint64_t>(rng());
    case 3:
        return std::ldexp(static_cast<double>(rng() % 100000) - 50000, int(rng() % 80) - 40);
    case 4:
        return rng() % 2 == 0;
    case 5:
        return nullptr;
    case 6: {
        json a = json::array();
        for (size_t i = rng() % 5; i > 0; --i)
            a.push_back(randomValue(rng, depth + 1));
        return a;
    }
    default: {
        json o = json::object();
        for (size_t i = rng() % 5; i > 0; --i)
            o[randomText(rng)] = randomValue(rng, depth + 1);
        return o;
    }
    }
}

}  // namespace

class TestUtil : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sha256MatchesQt()
    {
        qInfo("SHA-NI on this processor: %s", tb::Sha256::hardwareAvailable() ? "yes" : "no");
        std::mt19937_64 rng(7);
        std::vector<size_t> sizes;
        for (size_t n = 0; n <= 200; ++n)
            sizes.push_back(n);
        for (size_t n : {255, 256, 257, 1000, 4095, 4096, 65536 + 13, 1 << 20})
            sizes.push_back(n);
        for (size_t n : sizes) {
            const std::string bytes = randomBytes(rng, n);
            const std::string expected = qtSha256(bytes);
            for (bool hardware : {true, false}) {
                tb::Sha256 whole(hardware);
                whole.update(bytes);
                QCOMPARE(whole.hex(), expected);
                // The same bytes in random pieces (partial blocks, runs of whole blocks).
                tb::Sha256 pieces(hardware);
                for (size_t at = 0; at < n;) {
                    const size_t take = std::min<size_t>(n - at, rng() % 300);
                    pieces.update(bytes.data() + at, take);
                    at += take;
                }
                QCOMPARE(pieces.hex(), expected);
            }
        }
        // FIPS 180-4's own example.
        QCOMPARE(tb::sha256Hex("abc"),
                 std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    }

    void jsonWriterEdgeCases()
    {
        const json cases[] = {
            json::object(),
            json::array(),
            json(""),
            json(std::string("\0", 1)),
            json("\x01\x1f\x7f \"q\" \\ / \b\f\n\r\t"),
            json("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"),
            json(std::numeric_limits<int64_t>::min()),
            json(std::numeric_limits<int64_t>::max()),
            json(std::numeric_limits<uint64_t>::max()),
            json(0),
            json(-0.0),
            json(0.1),
            json(1e300),
            json(std::numeric_limits<double>::quiet_NaN()),
            json(std::numeric_limits<double>::infinity()),
            json(true),
            json(nullptr),
            json::parse(R"({"b": [1, {"z": null, "a": "x"}], "a": {"": []}, "\u0001": 2.5})"),
        };
        for (const json& v : cases)
            QCOMPARE(tb::toJson(v), v.dump());
    }

    // JSON nesting is counted before a parse: 512 levels pass, 513 name the place and the byte;
    // brackets inside strings (escaped quotes included) do not count. Parsed, copied and printed,
    // 100,000 levels (the rejected case) would overflow the stack.
    void jsonDepthBounded()
    {
        const auto nested = [](int levels, const std::string& inner = "1") {
            std::string s;
            for (int i = 0; i < levels; ++i)
                s += i % 2 ? "{\"k\":" : "[";
            s += inner;
            for (int i = levels - 1; i >= 0; --i)
                s += i % 2 ? "}" : "]";
            return s;
        };
        const std::string ok = nested(tb::kMaxJsonDepth);
        QVERIFY(!tb::jsonTooDeep(ok));
        tb::checkJsonDepth(ok, "ok.json");
        QCOMPARE(json::parse(ok).dump(), ok);
        const std::string deep = nested(tb::kMaxJsonDepth + 1);
        QVERIFY(tb::jsonTooDeep(deep));
        size_t at = 0;  // the 513th opening bracket
        for (int level = 0; level <= tb::kMaxJsonDepth; ++level)
            at = deep.find_first_of("[{", level == 0 ? 0 : at + 1);
        std::string message;
        try {
            tb::checkJsonDepth(deep, "rows.jsonl:7");
        } catch (const tb::Error& e) {
            message = e.what();
        }
        QCOMPARE(message, "rows.jsonl:7: JSON nested deeper than 512 levels (at byte " +
                              std::to_string(at) + ")");
        QVERIFY(tb::jsonTooDeep(nested(100000)));
        // Brackets in strings are text.
        const std::string text = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') +
                                 "\", {\"a\": \"]]]\"}]";
        QVERIFY(!tb::jsonTooDeep(text));
        QCOMPARE(json::parse(text).size(), size_t(2));
    }

    void jsonWriterRandomDocuments()
    {
        std::mt19937_64 rng(11);
        for (int i = 0; i < 3000; ++i) {
            const json v = randomValue(rng, 0);
            QCOMPARE(tb::toJson(v), v.dump());
        }
    }

    void jsonWriterInvalidUtf8ThrowsAsDump()
    {
        for (const char* bad :
             {"ok\xff", "\xc0\xaf", "\xed\xa0\x80", "x\xe4\xb8", "\xf4\x90\x80\x80"}) {
            const json v = json::object({{"k", bad}});
            std::string expected, got;
            try {
                (void)v.dump();
            } catch (const json::type_error& e) {
                expected = e.what();
            }
            try {
                (void)tb::toJson(v);
            } catch (const json::type_error& e) {
                got = e.what();
            }
            QVERIFY2(!expected.empty(), bad);
            QCOMPARE(got, expected);
        }
    }

    void jsonWriterOnTheBundledDataset()
    {
        std::ifstream in(std::string(TB_SOURCE_DIR) + "/datasets/tiny/train.jsonl");
        QVERIFY(in);
        std::string line;
        int rows = 0;
        while (std::getline(in, line)) {
            if (line.empty())
                continue;
            const json v = json::parse(line);
            QCOMPARE(tb::toJson(v), v.dump());
            ++rows;
        }
        QVERIFY(rows > 10);
    }

    // A 64 MiB block (above glibc's largest default mmap threshold, 32 MiB) comes from the heap,
    // not from a mapping of its own, and its pages stay with the process after a free, so the
    // next block of that size reuses them.
    void largeBlocksStayInHeap()
    {
#if defined(__GLIBC__)
        tb::keepLargeBlocksInHeap();
        constexpr size_t kBytes = size_t(64) << 20;
        const size_t mappedBefore = mallinfo2().hblkhd;
        char* volatile block = static_cast<char*>(std::malloc(kBytes));
        QVERIFY(block != nullptr);
        std::memset(block, 1, kBytes);
        const struct mallinfo2 during = mallinfo2();
        std::free(block);
        const struct mallinfo2 after = mallinfo2();
        QCOMPARE(during.hblkhd, mappedBefore);  // nothing mapped for it
        QVERIFY(during.uordblks >= kBytes);     // in use in the heap
        QVERIFY(after.fordblks >= kBytes);      // freed, kept for the next one
#else
        QSKIP("the heap setting applies to glibc's malloc only");
#endif
    }
    void staleTemporariesCleared()
    {
        // A writer killed mid-write left "f.tmp.PID"; the next write of f removes it, and keeps
        // a live process's temporary and files that only look alike.
        QTemporaryDir dir;
        const std::string f = dir.filePath(QStringLiteral("f.gguf")).toStdString();
        const std::string dead = f + ".tmp.999999999";  // above any pid_max
        const std::string live = f + ".tmp." + std::to_string(::getppid());
        const std::string other = f + ".tmp.notes";
        const std::string recent = f + ".tmp.999999998";  // gone, but written a moment ago
        for (const std::string& p : {dead, live, other, recent})
            tb::writeFileAtomic(p, "partial");
        for (const std::string& p : {dead, live, other})
            std::filesystem::last_write_time(p, std::filesystem::file_time_type::clock::now() -
                                                    std::chrono::minutes(5));
        tb::writeFileAtomic(f, "whole");
        QVERIFY(!tb::fileExists(dead));
        QVERIFY(tb::fileExists(recent));  // perhaps a writer this process cannot see
        QVERIFY(tb::fileExists(live));
        QVERIFY(tb::fileExists(other));
        QCOMPARE(tb::readFile(f), std::string("whole"));
    }
    void stagedFolderWholeOrNothing()
    {
        namespace fs = std::filesystem;
        QTemporaryDir dir;
        const std::string target = dir.filePath(QStringLiteral("out")).toStdString();
        const auto entries = [&](const std::string& folder) {
            std::vector<std::string> names;
            for (const auto& e : fs::directory_iterator(folder))
                names.push_back(e.path().filename().string());
            std::sort(names.begin(), names.end());
            return names;
        };
        {  // a new folder: nothing at the target until commit
            tb::StagedFolder staged(target);
            tb::writeFileAtomic(tb::joinPath(staged.path(), "a.txt"), "one");
            QVERIFY(!tb::fileExists(target));
            staged.commit();
        }
        QCOMPARE(entries(target), std::vector<std::string>{"a.txt"});
        {  // an error on the way: the previous folder stays as it was, the staging goes
            tb::StagedFolder staged(target);
            tb::writeFileAtomic(tb::joinPath(staged.path(), "b.txt"), "two");
        }
        QCOMPARE(entries(target), std::vector<std::string>{"a.txt"});
        QCOMPARE(entries(dir.path().toStdString()), std::vector<std::string>{"out"});
        {  // a replacement: the whole content swapped, the old files gone
            tb::StagedFolder staged(target);
            tb::writeFileAtomic(tb::joinPath(staged.path(), "b.txt"), "two");
            staged.commit();
        }
        QCOMPARE(entries(target), std::vector<std::string>{"b.txt"});
        QCOMPARE(tb::readFile(tb::joinPath(target, "b.txt")), std::string("two"));
        QCOMPARE(entries(dir.path().toStdString()), std::vector<std::string>{"out"});
        // A writer killed mid-way leaves its staging folder: the next one removes it when no
        // process has that id, and leaves a live writer's alone.
        long dead = 999999;
        while (::kill(static_cast<pid_t>(dead), 0) == 0 || errno != ESRCH)
            --dead;
        const std::string stale =
            dir.filePath(QStringLiteral(".out.tmp-%1").arg(dead)).toStdString();
        const std::string live =
            dir.filePath(QStringLiteral(".out.tmp-%1").arg(::getppid())).toStdString();
        tb::makeDirectories(stale);
        tb::makeDirectories(live);
        {
            tb::StagedFolder staged(target);
            QVERIFY(!tb::fileExists(stale));
            QVERIFY(tb::fileExists(live));
        }
        fs::remove_all(live);
        QCOMPARE(entries(dir.path().toStdString()), std::vector<std::string>{"out"});
    }
    void replaceableFolderRefusesForeignFiles()
    {
        QTemporaryDir dir;
        const auto ours = [](const std::string& name) { return name == "config.json"; };
        const std::string target = dir.filePath(QStringLiteral("out")).toStdString();
        tb::checkReplaceableFolder(target, ours, "export");  // new: fine
        tb::makeDirectories(target);
        tb::checkReplaceableFolder(target, ours, "export");  // empty: fine
        tb::writeFileAtomic(tb::joinPath(target, "config.json"), "{}");
        tb::checkReplaceableFolder(target, ours, "export");  // a previous export: fine
        tb::writeFileAtomic(tb::joinPath(target, "notes.txt"), "mine");
        const auto errorOf = [&](const std::string& path) -> std::string {
            try {
                tb::checkReplaceableFolder(path, ours, "export");
            } catch (const tb::Error& e) {
                return e.what();
            }
            return {};
        };
        const std::string foreign = errorOf(target);
        QVERIFY2(foreign.find("export: " + target + " holds 'notes.txt', which no export writes") ==
                     0,
                 foreign.c_str());
        const std::string file = tb::joinPath(target, "config.json");
        QCOMPARE(errorOf(file), "export: " + file + " exists and is not a folder");
    }
};

QTEST_GUILESS_MAIN(TestUtil)
#include "test_util.moc"
