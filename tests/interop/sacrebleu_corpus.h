// The seeded corpus test_sacrebleu_interop scores with sacrebleu and with core/eval: hand-written
// cases for each rule and script the metrics treat apart, then generated hypotheses (edited,
// reordered, unrelated, empty) with one to three references, 600 examples in all.
#pragma once

#include "test_util.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tbtest {

struct Example {
    std::string hyp;
    std::vector<std::string> refs;
};

inline std::string repeatWords(const char* word, int n)
{
    std::string out;
    for (int i = 0; i < n; ++i) {
        if (i)
            out += ' ';
        out += tbtest::numbered(word, i % 37);
    }
    return out;
}

// The cases a generator would rarely hit, one rule or script each.
inline std::vector<Example> handCases()
{
    const std::string longRef = repeatWords("w", 120);
    std::vector<Example> out = {
        {"The quick brown fox jumps over the lazy dog.",
         {"The quick brown fox jumps over the lazy dog."}},
        {"alpha beta gamma", {"uno dos tres"}},
        {"", {"a reference sentence ."}},
        {"some hypothesis here", {""}},
        {"", {""}},
        {"   \t ", {"word"}},
        {"x", {"   "}},
        {"It costs $3.50, or 1,000.25 units-ish at 10-20 km.",
         {"It costs $ 3.50 , or 1,000.25 units at 10 - 20 km ."}},
        {"pages 3-5 and 7- then -8 a-b", {"pages 3 - 5 and 7 - then - 8 a-b"}},
        {".5 is 0.5; 5. is five. 1.2.3 x.y 3,x ,5", {"0.5 is .5 ; 5 . is five"}},
        {"He said &quot;hello&quot; &amp; left &lt;now&gt; &amp;amp; &amp;quot;x &#39;",
         {"He said \"hello\" & left <now>"}},
        {"\xE2\x80\x9CSmart\xE2\x80\x9D quotes \xE2\x80\x98single\xE2\x80\x99 "
         "\xC2\xABguillemets\xC2\xBB \"straight\" 'apos' it's",
         {"\"Smart\" quotes 'single' \"guillemets\" \"straight\" 'apos' it 's"}},
        {"a\xE2\x80\x93"
         "b \xE2\x80\x94 c - d -- e \xE2\x80\x92 f",
         {"a - b \xE2\x80\x94 c - d - - e"}},
        {"End of sentence.", {"End of sentence ."}},
        {"Etc... and so on..", {"Etc ... and so on . ."}},
        {"keep <skipped> this<skipped>", {"keep this"}},
        {"line one-\ncontinued\nline two\n", {"line onecontinued line two"}},
        {"THE CAT SAT ON THE MAT", {"the cat sat on the mat"}},
        {"\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\x9A\xCE\x91\xCE\x99 "
         "\xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91 \xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3.",
         {"\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82 \xCE\xBA\xCE\xB1\xCE\xB9 "
          "\xCF\x83\xCE\xBF\xCF\x86\xCE\xB9\xCE\xB1 \xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82.",
          "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83 \xCE\xBA\xCE\xB1\xCE\xB9 "
          "\xCF\x83\xCE\xBF\xCF\x86\xCE\xB9\xCE\xB1 \xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83."}},
        {"\xCE\xA3 \xCE\x91\xCE\xA3\xCE\x91 \xCE\x91\xCE\xA3' \xCE\x91\xCE\xA3\xCC\x81 "
         "\xCE\x91\xCE\xA3-\xCE\x92",
         {"\xCF\x83 \xCE\xB1\xCF\x83\xCE\xB1 \xCE\xB1\xCF\x82' \xCE\xB1\xCF\x82\xCC\x81 "
          "\xCE\xB1\xCF\x82-\xCE\xB2"}},
        {"\xC4\xB0STANBUL \xC4\xB0stanbul ISTANBUL", {"i\xCC\x87stanbul istanbul istanbul"}},
        {"\xE6\x88\x91\xE7\x88\xB1\xE5\x8C\x97\xE4\xBA\xAC\xE5\xA4\xA9\xE5\xAE\x89\xE9\x97\xA8\xE3"
         "\x80\x82",
         {"\xE6\x88\x91\xE7\x88\xB1\xE5\x8C\x97\xE4\xBA\xAC\xE3\x80\x82\xE5\xA4\xA9\xE5\xAE\x89\xE9"
          "\x97\xA8"}},
        {"\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x97\xA5\xE6\x9C\xAC\xE3\x81\xAE\xE9\xA6\x96\xE9"
         "\x83\xBD\xE3\x81\xA7\xE3\x81\x99 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
         {"\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x97\xA5\xE6\x9C\xAC\xE3\x81\xAE\xE9\xA6\x96\xE9"
          "\x83\xBD\xE3\x81\xA0 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"}},
        {"I \xE2\x9D\xA4\xEF\xB8\x8F \xF0\x9F\x8D\x95 and "
         "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 family "
         "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7!",
         {"I \xE2\x9D\xA4 \xF0\x9F\x8D\x95 and \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 family "
          "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7 !"}},
        {"cafe\xCC\x81 nai\xCC\x88ve re\xCC\x81sume\xCC\x81",
         {"caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9"}},
        {"\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 "
         "\xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85\xD8\x8C "
         "\xD9\x83\xD9\x8A\xD9\x81 \xD8\xAD\xD8\xA7\xD9\x84\xD9\x83\xD8\x9F",
         {"\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 "
          "\xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85 \xD8\x8C "
          "\xD9\x83\xD9\x8A\xD9\x81 \xD8\xAD\xD8\xA7\xD9\x84\xD9\x83 \xD8\x9F"}},
        {"\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D.",
         {"\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D, \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D."}},
        {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87 "
         "\xE0\xA4\xA6\xE0\xA5\x81\xE0\xA4\xA8\xE0\xA4\xBF\xE0\xA4\xAF\xE0\xA4\xBE\xE0\xA5\xA4",
         {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87, "
          "\xE0\xA4\xA6\xE0\xA5\x81\xE0\xA4\xA8\xE0\xA4\xBF\xE0\xA4\xAF\xE0\xA4\xBE\xE0\xA5\xA4"}},
        {"\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5\xE0\xB8\x8A\xE0"
         "\xB8\xB2\xE0\xB8\xA7\xE0\xB9\x82\xE0\xB8\xA5\xE0\xB8\x81",
         {"\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5 "
          "\xE0\xB8\x8A\xE0\xB8\xB2\xE0\xB8\xA7\xE0\xB9\x82\xE0\xB8\xA5\xE0\xB8\x81"}},
        {"\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\x9C\xD0\x98\xD0\xA0, "
         "\xD0\xBA\xD0\xB0\xD0\xBA \xD0\xB4\xD0\xB5\xD0\xBB\xD0\xB0?",
         {"\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80, "
          "\xD0\xBA\xD0\xB0\xD0\xBA \xD0\xB4\xD0\xB5\xD0\xBB\xD0\xB0?"}},
        // NBSP, ideographic space, em space and U+001C split; the zero-width space does not
        {"a\xC2\xA0"
         "b\xE3\x80\x80"
         "c\xE2\x80\x83"
         "d\x1C"
         "e\xE2\x80\x8B"
         "f\xC2\x85g",
         {"a b c d e f g"}},
        {"tab\tseparated\r\nwindows\x0B\x0C end", {"tab separated windows end"}},
        {"\xD9\xA3.\xD9\xA1\xD9\xA4 and \xEF\xBC\x93.\xEF\xBC\x91\xEF\xBC\x94 "
         "\xEF\xBC\x8C\xE3\x80\x82\xEF\xBC\x81\xEF\xBC\x9F",
         {"3.14 and 3.14 , . ! ?"}},
        {"John's dog's bone isn't Mary's", {"John 's dog 's bone is n't Mary 's"}},
        {"see https://example.com/a-b?c=d&e=f or mail x.y@z.org",
         {"see https : / / example.com / a-b ? c = d & e = f"}},
        {"a{b}c|d~e[f]g^h_i`j\\k#l%m*n+o=p", {"a { b } c | d ~ e [ f ] g ^ h _ i ` j \\ k"}},
        {"...!!!???", {"..."}},
        {"the the the the the the the", {"the cat is on the mat"}},
        {"a", {"a"}},
        {"a", {"b"}},
        {".", {"."}},
        {"the cat", {"the cat sat"}},
        {"the cat is on the mat",
         {"there is a cat on the mat", "the cat sat on the mat", "a cat is on the mat"}},
        {"hello world", {"", "hello world"}},
        {"one two three four", {"one two three", "one two three four five"}},
        {"(hi) !wow! end. ,start x \"quoted\" a.",
         {"( hi ) ! wow ! end . , start x \" quoted \" a ."}},
        {"\xC7\x85ungla \xC7\x88 \xE2\x85\xAB \xE2\x92\xB6 \xEF\xAC\x81ne Stra\xC3\x9F"
         "e STRASSE",
         {"\xC7\x86ungla \xC7\x89 \xE2\x85\xBB \xE2\x93\x90 fine strasse strasse"}},
        {"word", {longRef}},                                           // TER's beam widens
        {repeatWords("v", 100), {"short ref"}},                        // hypothesis much longer
        {repeatWords("w", 120), {longRef}},                            // identical long
        {"c d e f g h i j k l m a b", {"a b c d e f g h i j k l m"}},  // one long shift
        {"b a d c f e h g j i", {"a b c d e f g h i j"}},              // many small ones
    };
    // TER's limits: a run further than 50 words from its place is not shifted, one within is;
    // the round that reaches 1,000 candidates applies no shift
    const auto swapped = [](int x, int y, std::string* ref) {
        *ref = repeatWords("y", y) + " " + repeatWords("x", x);
        return repeatWords("x", x) + " " + repeatWords("y", y);
    };
    std::string ref;
    out.push_back({swapped(5, 55, &ref), {ref}});
    out.push_back({swapped(8, 50, &ref), {ref}});
    std::string ab, cd;
    for (int i = 0; i < 5; ++i) {
        ab += "a b ";
        cd += "c d ";
    }
    out.push_back({ab + cd, {cd + ab}});
    return out;
}

// The generator's words: every script and punctuation class 13a, chrF++ and TER treat apart.
inline const std::vector<std::string>& wordPool()
{
    static const std::vector<std::string> pool = {
        "the",
        "cat",
        "sat",
        "on",
        "mat",
        "house",
        "river",
        "Paris",
        "New",
        "York",
        "quick",
        "brown",
        "a",
        "I",
        "is",
        "was",
        "of",
        "and",
        "to",
        "in",
        "THE",
        "Cat",
        "don't",
        "it's",
        "co-op",
        "caf\xC3\xA9",
        "na\xC3\xAFve",
        "\xC3\xBC"
        "ber",
        "\xC3\x85ngstr\xC3\xB6m",
        "se\xC3\xB1or",
        "fa\xC3\xA7"
        "ade",
        "Z\xC3\xBCrich",
        "\xC5\x82\xC3\xB3"
        "d\xC5\xBA",
        "3.14",
        "1,000",
        "2-3",
        "10-",
        "-5",
        "42",
        "0.5",
        ".5",
        "5.",
        "1.000,5",
        "12:30",
        "3/4",
        "50%",
        "$20",
        "\xE2\x82\xAC"
        "15",
        "#1",
        ".",
        ",",
        "!",
        "?",
        ";",
        ":",
        "(",
        ")",
        "\"",
        "'",
        "-",
        "\xE2\x80\x93",
        "\xE2\x80\x94",
        "...",
        "\xE2\x80\xA6",
        "\xC2\xAB",
        "\xC2\xBB",
        "\xE2\x80\x9C",
        "\xE2\x80\x9D",
        "\xE2\x80\x99",
        "/",
        "&",
        "@",
        "*",
        "[",
        "]",
        "{",
        "}",
        "&quot;",
        "&amp;",
        "&lt;",
        "&gt;",
        "&amp;quot;",
        "&#39;",
        "\xE6\x88\x91",
        "\xE5\x8C\x97\xE4\xBA\xAC",
        "\xE6\x9D\xB1\xE4\xBA\xAC",
        "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
        "\xE3\x82\xB5\xE3\x83\x83\xE3\x82\xAB\xE3\x83\xBC",
        "\xE3\x80\x82",
        "\xE3\x80\x81",
        "\xF0\x9F\x8D\x95",
        "\xE2\x9D\xA4\xEF\xB8\x8F",
        "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
        "\xF0\x9F\x98\x80",
        "e\xCC\x81",
        "a\xCC\x88",
        "n\xCC\x83",
        "\xC7\x85",
        "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3",
        "\xCE\xBF\xCE\xB4\xCF\x8C\xCF\x82",
        "\xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1",
        "\xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91\xCE\xA3",
        "\xCE\xBB\xCF\x8C\xCE\xB3\xCE\xBF\xCF\x82",
        "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
        "\xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90",
        "\xD1\x91\xD0\xBB\xD0\xBA\xD0\xB0",
        "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
        "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D",
        "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
        "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5",
        "\xC4\xB0stanbul",
        "ISTANBUL",
        "stra\xC3\x9F"
        "e",
        "STRASSE",
        "\xEF\xAC\x81",
    };
    return pool;
}

// What goes between two words: mostly a space, sometimes nothing (punctuation glued on) or other
// whitespace, newlines included.
inline const char* const kGaps[] = {" ", " ",  " ",  " ",        " ",  " ",   " ",
                                    " ", " ",  " ",  " ",        " ",  " ",   "",
                                    "",  "  ", "\t", "\xC2\xA0", "\n", "-\n", "\xE3\x80\x80"};

class CorpusGenerator {
public:
    explicit CorpusGenerator(uint32_t seed) : m_rng(seed) {}

    // A pseudo-random integer in [0, n) (std::mt19937 is the same everywhere; the standard
    // distributions are not).
    size_t below(size_t n) { return n ? m_rng() % n : 0; }
    bool chance(int percent) { return below(100) < size_t(percent); }

    std::vector<std::string> words(size_t n)
    {
        std::vector<std::string> out;
        for (size_t i = 0; i < n; ++i)
            out.push_back(wordPool()[below(wordPool().size())]);
        return out;
    }

    size_t length()
    {
        const size_t r = below(100);
        return r < 2    ? 0
               : r < 17 ? 1 + below(3)
               : r < 89 ? 4 + below(22)
               : r < 99 ? 26 + below(25)
                        : 60 + below(30);
    }

    std::string render(const std::vector<std::string>& words)
    {
        std::string out = chance(3) ? " " : "";
        for (size_t i = 0; i < words.size(); ++i) {
            if (i)
                out += kGaps[below(std::size(kGaps))];
            out += words[i];
        }
        if (chance(10))
            out += chance(50) ? "\n" : " ";
        return out;
    }

    // An edited copy: deletions, substitutions, insertions, case changes, then moved runs.
    std::vector<std::string> edit(std::vector<std::string> w, int rate)
    {
        std::vector<std::string> out;
        for (std::string& word : w) {
            const size_t r = below(100);
            if (r < size_t(rate))
                continue;
            if (r < size_t(2 * rate))
                word = words(1)[0];
            else if (r < size_t(2 * rate + 4))
                for (char& c : word)
                    c = (c >= 'a' && c <= 'z')   ? char(c - 32)
                        : (c >= 'A' && c <= 'Z') ? char(c + 32)
                                                 : c;
            out.push_back(word);
            if (chance(rate / 2 + 1))
                out.push_back(words(1)[0]);
        }
        for (int moves = chance(40) ? 1 + int(below(3)) : 0; moves > 0 && out.size() > 2; --moves) {
            const size_t from = below(out.size()),
                         len = 1 + below(std::min<size_t>(5, out.size() - from));
            std::vector<std::string> run(out.begin() + long(from), out.begin() + long(from + len));
            out.erase(out.begin() + long(from), out.begin() + long(from + len));
            out.insert(out.begin() + long(below(out.size() + 1)), run.begin(), run.end());
        }
        return out;
    }

    Example example()
    {
        const std::vector<std::string> ref = words(length());
        Example e;
        const size_t kind = below(100);
        if (kind < 8)
            e.hyp = render(ref);
        else if (kind < 15)
            e.hyp = render(words(length()));
        else if (kind < 17)
            e.hyp = "";
        else
            e.hyp = render(edit(ref, 3 + int(below(20))));
        e.refs.push_back(render(ref));
        const size_t extra = chance(50) ? 0 : chance(60) ? 1 : 2;
        for (size_t k = 0; k < extra; ++k)
            e.refs.push_back(chance(4) ? "" : render(edit(ref, 2 + int(below(15)))));
        return e;
    }

private:
    std::mt19937 m_rng;
};

inline std::vector<Example> corpus()
{
    std::vector<Example> out = handCases();
    CorpusGenerator generator(20240607);
    while (out.size() < 600)
        out.push_back(generator.example());
    return out;
}

}  // namespace tbtest
