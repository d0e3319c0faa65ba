// Leak and PII scan of record text: private keys, API keys and tokens, passwords in URLs, email
// addresses, phone numbers, payment card numbers and IBANs, each found with a masked preview.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

struct ScanMatch {
    // "private_key", "api_key", "password_in_url", "email", "phone", "card_number" or "iban"
    std::string kind;
    size_t offset = 0;   // bytes from the start of the text
    size_t length = 0;   // bytes
    std::string masked;  // maskMatch(text.substr(offset, length), kind)
};

// Every finding in text, by increasing offset, never overlapping (where two kinds cover the same
// bytes the first of private_key, password_in_url, api_key, iban, card_number, email, phone wins).
// For `api_key = <value>` style assignments the match is the value alone. Patterns are ASCII and
// run on bytes, so any input (invalid UTF-8 included) is scanned. Safe to call from many threads.
// See docs/data-curation.md for what each kind accepts and rejects.
std::vector<ScanMatch> scanText(std::string_view text);

// Luhn checksum of a card number; spaces and dashes are skipped, any other non-digit (or no
// digit at all) gives false.
bool luhnValid(std::string_view digits);

// IBAN check: spaces skipped, letters either case; two letters, two check digits, an alphanumeric
// BBAN, the length registered for the country (for ~65 common countries; 15-34 for others), and
// the ISO 7064 mod-97 remainder 1.
bool ibanValid(std::string_view iban);

// A preview that never shows the whole secret. Emails keep the first character of the local part
// and the domain ("j*******@example.com"); cards keep the last 4 digits and the separators;
// private keys keep their BEGIN/END lines with the body as "****"; passwords in URLs keep
// everything but the password. Anything else keeps its first and last 2 characters (1 under 10
// characters, 0 under 6), spaces and dashes staying in place, and '*' for the rest.
std::string maskMatch(std::string_view match, const std::string& kind);

}  // namespace tb
