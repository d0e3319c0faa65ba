// NLTK's Porter stemmer (NLTK_EXTENSIONS mode): steps 1a-5b of the paper with NLTK's deviations.
#include "eval/porter_stemmer.h"

#include <initializer_list>
#include <utility>
#include <vector>

namespace tb::eval {

namespace {

bool isVowelLetter(char c)
{
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

// consonant[i]: a letter other than a vowel, and other than a 'y' that follows a consonant.
std::vector<bool> consonantFlags(std::string_view word)
{
    std::vector<bool> flags(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
        if (isVowelLetter(word[i]))
            flags[i] = false;
        else if (word[i] == 'y')
            flags[i] = i == 0 ? true : !flags[i - 1];
        else
            flags[i] = true;
    }
    return flags;
}

bool isConsonant(std::string_view word, size_t i)
{
    return consonantFlags(word.substr(0, i + 1))[i];
}

// m of [C](VC){m}[V]: the number of vowel-consonant transitions.
int measure(std::string_view stem)
{
    const std::vector<bool> flags = consonantFlags(stem);
    int m = 0;
    for (size_t i = 0; i + 1 < flags.size(); ++i)
        m += !flags[i] && flags[i + 1];
    return m;
}

bool containsVowel(std::string_view stem)
{
    for (bool consonant : consonantFlags(stem))
        if (!consonant)
            return true;
    return false;
}

// *d: the word ends with a double consonant.
bool endsDoubleConsonant(std::string_view word)
{
    const size_t n = word.size();
    return n >= 2 && word[n - 1] == word[n - 2] && isConsonant(word, n - 1);
}

// *o: the word ends consonant-vowel-consonant, the last not w, x or y; NLTK adds a two-letter
// word that is vowel-consonant.
bool endsCvc(std::string_view word)
{
    const size_t n = word.size();
    if (n >= 3 && isConsonant(word, n - 3) && !isConsonant(word, n - 2) &&
        isConsonant(word, n - 1) && word[n - 1] != 'w' && word[n - 1] != 'x' && word[n - 1] != 'y')
        return true;
    return n == 2 && !isConsonant(word, 0) && isConsonant(word, 1);
}

bool endsWith(std::string_view word, std::string_view suffix)
{
    return word.size() >= suffix.size() && word.substr(word.size() - suffix.size()) == suffix;
}

// A rule's condition sees the stem (the word less the suffix) and the whole word.
using Condition = bool (*)(std::string_view stem, std::string_view word);

struct Rule {
    std::string_view suffix;
    std::string_view replacement;
    Condition condition;  // nullptr: unconditional
};

bool positiveMeasure(std::string_view stem, std::string_view)
{
    return measure(stem) > 0;
}

bool measureAboveOne(std::string_view stem, std::string_view)
{
    return measure(stem) > 1;
}

// The first rule whose suffix the word ends with decides: its replacement when its condition
// holds, else the word unchanged (later rules are not tried).
std::string applyRules(const std::string& word, std::initializer_list<Rule> rules)
{
    for (const Rule& rule : rules) {
        if (!endsWith(word, rule.suffix))
            continue;
        const std::string_view stem =
            std::string_view(word).substr(0, word.size() - rule.suffix.size());
        if (rule.condition == nullptr || rule.condition(stem, word))
            return std::string(stem) + std::string(rule.replacement);
        return word;
    }
    return word;
}

std::string step1a(const std::string& word)
{
    if (word.size() == 4 && endsWith(word, "ies"))
        return word.substr(0, 1) + "ie";
    return applyRules(word, {{"sses", "ss", nullptr},
                             {"ies", "i", nullptr},
                             {"ss", "ss", nullptr},
                             {"s", "", nullptr}});
}

std::string step1b(const std::string& word)
{
    if (endsWith(word, "ied"))
        return word.size() == 4 ? word.substr(0, 1) + "ie" : word.substr(0, word.size() - 3) + "i";
    if (endsWith(word, "eed")) {
        const std::string stem = word.substr(0, word.size() - 3);
        return measure(stem) > 0 ? stem + "ee" : word;
    }
    std::string stem;
    bool removed = false;
    for (std::string_view suffix : {std::string_view("ed"), std::string_view("ing")}) {
        if (endsWith(word, suffix)) {
            stem = word.substr(0, word.size() - suffix.size());
            if (containsVowel(stem)) {
                removed = true;
                break;
            }
        }
    }
    if (!removed)
        return word;
    if (endsWith(stem, "at") || endsWith(stem, "bl") || endsWith(stem, "iz"))
        return stem + "e";
    if (endsDoubleConsonant(stem)) {
        const char last = stem.back();
        return last == 'l' || last == 's' || last == 'z' ? stem : stem.substr(0, stem.size() - 1);
    }
    return measure(stem) == 1 && endsCvc(stem) ? stem + "e" : stem;
}

std::string step1c(const std::string& word)
{
    // NLTK: y -> i after a consonant, unless that consonant is all the stem.
    return applyRules(word, {{"y", "i", [](std::string_view stem, std::string_view) {
                                  return stem.size() > 1 && isConsonant(stem, stem.size() - 1);
                              }}});
}

std::string step2(const std::string& word)
{
    // NLTK applies ALLI -> AL first and runs the result through step 2 again.
    if (endsWith(word, "alli") && measure(std::string_view(word).substr(0, word.size() - 4)) > 0)
        return step2(word.substr(0, word.size() - 4) + "al");
    return applyRules(word, {{"ational", "ate", positiveMeasure},
                             {"tional", "tion", positiveMeasure},
                             {"enci", "ence", positiveMeasure},
                             {"anci", "ance", positiveMeasure},
                             {"izer", "ize", positiveMeasure},
                             {"bli", "ble", positiveMeasure},
                             {"alli", "al", positiveMeasure},
                             {"entli", "ent", positiveMeasure},
                             {"eli", "e", positiveMeasure},
                             {"ousli", "ous", positiveMeasure},
                             {"ization", "ize", positiveMeasure},
                             {"ation", "ate", positiveMeasure},
                             {"ator", "ate", positiveMeasure},
                             {"alism", "al", positiveMeasure},
                             {"iveness", "ive", positiveMeasure},
                             {"fulness", "ful", positiveMeasure},
                             {"ousness", "ous", positiveMeasure},
                             {"aliti", "al", positiveMeasure},
                             {"iviti", "ive", positiveMeasure},
                             {"biliti", "ble", positiveMeasure},
                             {"fulli", "ful", positiveMeasure},
                             // the 'l' of "logi" stays with the stem in the measure ("geo", "theo")
                             {"logi", "log", [](std::string_view, std::string_view w) {
                                  return measure(w.substr(0, w.size() - 3)) > 0;
                              }}});
}

std::string step3(const std::string& word)
{
    return applyRules(word, {{"icate", "ic", positiveMeasure},
                             {"ative", "", positiveMeasure},
                             {"alize", "al", positiveMeasure},
                             {"iciti", "ic", positiveMeasure},
                             {"ical", "ic", positiveMeasure},
                             {"ful", "", positiveMeasure},
                             {"ness", "", positiveMeasure}});
}

std::string step4(const std::string& word)
{
    return applyRules(word, {{"al", "", measureAboveOne},
                             {"ance", "", measureAboveOne},
                             {"ence", "", measureAboveOne},
                             {"er", "", measureAboveOne},
                             {"ic", "", measureAboveOne},
                             {"able", "", measureAboveOne},
                             {"ible", "", measureAboveOne},
                             {"ant", "", measureAboveOne},
                             {"ement", "", measureAboveOne},
                             {"ment", "", measureAboveOne},
                             {"ent", "", measureAboveOne},
                             {"ion", "",
                              [](std::string_view stem, std::string_view) {
                                  return measure(stem) > 1 &&
                                         (stem.back() == 's' || stem.back() == 't');
                              }},
                             {"ou", "", measureAboveOne},
                             {"ism", "", measureAboveOne},
                             {"ate", "", measureAboveOne},
                             {"iti", "", measureAboveOne},
                             {"ous", "", measureAboveOne},
                             {"ive", "", measureAboveOne},
                             {"ize", "", measureAboveOne}});
}

std::string step5a(const std::string& word)
{
    if (!endsWith(word, "e"))
        return word;
    const std::string stem = word.substr(0, word.size() - 1);
    const int m = measure(stem);
    return m > 1 || (m == 1 && !endsCvc(stem)) ? stem : word;
}

std::string step5b(const std::string& word)
{
    return applyRules(word, {{"ll", "l", [](std::string_view, std::string_view w) {
                                  return measure(w.substr(0, w.size() - 1)) > 1;
                              }}});
}

// NLTK's irregular forms, looked up before any step.
const std::string* irregularStem(const std::string& word)
{
    static const std::vector<std::pair<std::string, std::string>> kForms = {
        {"sky", "sky"},        {"skies", "sky"},        {"dying", "die"},
        {"lying", "lie"},      {"tying", "tie"},        {"news", "news"},
        {"innings", "inning"}, {"inning", "inning"},    {"outings", "outing"},
        {"outing", "outing"},  {"cannings", "canning"}, {"canning", "canning"},
        {"howe", "howe"},      {"proceed", "proceed"},  {"exceed", "exceed"},
        {"succeed", "succeed"}};
    for (const auto& [form, stem] : kForms)
        if (form == word)
            return &stem;
    return nullptr;
}

}  // namespace

std::string porterStem(std::string_view word)
{
    std::string stem(word);
    for (char& c : stem)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    if (const std::string* irregular = irregularStem(stem))
        return *irregular;
    if (word.size() <= 2)
        return stem;
    stem = step1a(stem);
    stem = step1b(stem);
    stem = step1c(stem);
    stem = step2(stem);
    stem = step3(stem);
    stem = step4(stem);
    stem = step5a(stem);
    stem = step5b(stem);
    return stem;
}

}  // namespace tb::eval
