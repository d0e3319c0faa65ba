// The Porter stemmer as NLTK's PorterStemmer implements it in its default NLTK_EXTENSIONS mode, the
// one rouge-score's tokenizer uses (Porter, "An algorithm for suffix stripping", 1980, with
// Martin Porter's later changes and NLTK's: irregular forms, "ies"/"ied" of 4-letter words,
// y -> i only after a consonant that is not the word's first letter, "alli" first, "fulli",
// "logi", and words of 1-2 letters left as they are).
#pragma once

#include <string>
#include <string_view>

namespace tb::eval {

// The stem of an ASCII word; ASCII letters are lowercased first (as nltk's stem() does), other
// bytes count as consonants and are kept. rouge-score passes lowercase [a-z0-9] tokens only.
std::string porterStem(std::string_view word);

}  // namespace tb::eval
