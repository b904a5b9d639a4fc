#include "examples/seq2seq/seq2seq_data.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "examples/common/data_file.hpp"
#include "io/json.hpp"

namespace attn::seq2seq {

// ---- vocabularies ------------------------------------------------------------------

Vocab::Vocab() : symbols_{"<pad>", "<s>", "</s>", "<unk>"} {}

Vocab::Vocab(const std::vector<std::string>& symbols) : Vocab() {
    for (const auto& s : symbols) add(s);
}

int64_t Vocab::add(const std::string& symbol) {
    const int64_t existing = id(symbol);
    if (existing != kUnk || symbol == "<unk>") return existing;
    symbols_.push_back(symbol);
    return size() - 1;
}

int64_t Vocab::id(const std::string& symbol) const {
    const auto it = std::find(symbols_.begin(), symbols_.end(), symbol);
    return it == symbols_.end() ? kUnk : static_cast<int64_t>(it - symbols_.begin());
}

const std::string& Vocab::symbol(int64_t i) const {
    if (i < 0 || i >= size())
        throw std::out_of_range("Vocab: id " + std::to_string(i) + " is outside [0, " + std::to_string(size()) + ")");
    return symbols_[static_cast<size_t>(i)];
}

std::vector<int64_t> Vocab::encode(const std::vector<std::string>& symbols) const {
    std::vector<int64_t> ids;
    ids.reserve(symbols.size());
    for (const auto& s : symbols) ids.push_back(id(s));
    return ids;
}

std::vector<std::string> Vocab::decode(const std::vector<int64_t>& ids) const {
    std::vector<std::string> out;
    for (int64_t i : ids) {
        if (i == kEos) break;
        if (i == kPad || i == kBos) continue;
        out.push_back(symbol(i));
    }
    return out;
}

std::vector<std::string> characters(const std::string& text) {
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size();) {
        const char* why = "";
        const size_t n = utf8_char_length(text, i, &why);
        if (n == 0)
            throw std::invalid_argument("'" + text + "' is not valid UTF-8: " + why + " at byte " + std::to_string(i));
        out.push_back(text.substr(i, n));
        i += n;
    }
    return out;
}

std::string join(const std::vector<std::string>& symbols, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < symbols.size(); ++i) out += (i ? separator : "") + symbols[i];
    return out;
}

// ---- dates ---------------------------------------------------------------------------

namespace {

const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December"};
const char* const kDays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr int kFormats = 15;
constexpr int64_t kFirstDay = -7305;  // 1950-01-01 (kFirstYear), in days since 1970-01-01
constexpr int64_t kDayCount = 36525;  // to 2049-12-31 (kLastYear)

// Howard Hinnant's days_from_civil and civil_from_days.
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void civil_from_days(int64_t z, int& year, int& month, int& day) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    year = static_cast<int>(yoe + era * 400 + (month <= 2));
}

uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A name as written: "November", "november" or "NOVEMBER".
std::string cased(std::string name, Generator& gen) {
    const uint64_t c = gen.randint(4);  // Title case twice as often
    if (c == 2)
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (c == 3)
        for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return name;
}

std::string ordinal(int day) {
    const char* suffix = (day % 10 == 1 && day != 11) ? "st"
                         : (day % 10 == 2 && day != 12) ? "nd"
                         : (day % 10 == 3 && day != 13) ? "rd"
                                                        : "th";
    return std::to_string(day) + suffix;
}

std::string two(int v) { return (v < 10 ? "0" : "") + std::to_string(v); }

}  // namespace

int day_of_week(int year, int month, int day) {
    const int64_t z = days_from_civil(year, month, day);  // 1970-01-01 was a Thursday (3)
    return static_cast<int>(((z % 7) + 7 + 3) % 7);
}

int date_split(int year, int month, int day) {
    const uint64_t h = mix64(static_cast<uint64_t>(year * 10000 + month * 100 + day)) % 100;
    return h < 90 ? 0 : h < 95 ? 1 : 2;
}

int date_format_count() { return kFormats; }

std::string format_date(int y, int m, int d, int format, Generator& gen) {
    const std::string month = cased(kMonths[m - 1], gen);
    const std::string mon = month.substr(0, 3);
    const std::string weekday = cased(kDays[day_of_week(y, m, d)], gen);
    const std::string year = std::to_string(y), yy = two(y % 100);
    switch (format) {
        case 0: return std::to_string(d) + " " + month + " " + year;             // 22 November 2026
        case 1: return month + " " + std::to_string(d) + ", " + year;            // November 22, 2026
        case 2: return mon + " " + std::to_string(d) + " " + year;               // Nov 22 2026
        case 3: return std::to_string(d) + " " + mon + " " + year;               // 22 Nov 2026
        case 4: return weekday + ", " + mon + " " + std::to_string(d) + " " + year;  // Sunday, Nov 22 2026
        case 5: return weekday + ", " + std::to_string(d) + " " + month + " " + year;  // Sunday, 22 November 2026
        case 6: return std::to_string(m) + "/" + std::to_string(d) + "/" + yy;   // 11/22/26
        case 7: return two(m) + "/" + two(d) + "/" + year;                       // 11/22/2026
        case 8: return two(d) + "." + two(m) + "." + year;                       // 22.11.2026
        case 9: return std::to_string(d) + "." + std::to_string(m) + "." + yy;   // 22.11.26
        case 10: return year + "/" + two(m) + "/" + two(d);                      // 2026/11/22
        case 11: return ordinal(d) + " of " + month + " " + year;                // 22nd of November 2026
        case 12: return month + " " + ordinal(d) + ", " + year;                  // November 22nd, 2026
        case 13: return mon + " " + std::to_string(d) + ", '" + yy;              // Nov 22, '26
        case 14: return two(d) + "-" + mon + "-" + year;                         // 22-Nov-2026
        default:
            throw std::invalid_argument("format_date: format " + std::to_string(format) + " is outside [0, " +
                                        std::to_string(kFormats) + ")");
    }
}

std::vector<DateExample> generate_dates(int64_t n, int split, uint64_t seed) {
    Generator gen(mix64(seed * 3 + static_cast<uint64_t>(split)));
    std::vector<DateExample> out;
    out.reserve(static_cast<size_t>(n));
    while (static_cast<int64_t>(out.size()) < n) {
        int y = 0, m = 0, d = 0;
        civil_from_days(kFirstDay + static_cast<int64_t>(gen.randint(kDayCount)), y, m, d);
        if (date_split(y, m, d) != split) continue;
        const int format = static_cast<int>(gen.randint(kFormats));
        out.push_back({format_date(y, m, d, format, gen), std::to_string(y) + "-" + two(m) + "-" + two(d)});
    }
    return out;
}

// ---- lexicons --------------------------------------------------------------------------

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> split_spaces(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string t; in >> t;) out.push_back(t);
    return out;
}

[[noreturn]] void bad_line(const std::string& name, int64_t line, const std::string& why) {
    throw std::runtime_error(name + ":" + std::to_string(line) + ": " + why);
}

// "word(2)" → "word"; throws on "word(", "word(x)", "(2)".
std::string strip_alternate(const std::string& token, const std::string& name, int64_t line) {
    const size_t open = token.find('(');
    if (open == std::string::npos) return token;
    const std::string marker = token.substr(open);
    bool ok = marker.size() >= 3 && marker.back() == ')';
    for (size_t i = 1; ok && i + 1 < marker.size(); ++i) ok = std::isdigit(static_cast<unsigned char>(marker[i]));
    if (!ok) bad_line(name, line, "'" + token + "': an alternate must be written word(N), N a number");
    if (open == 0) bad_line(name, line, "'" + token + "': the word before (N) is empty");
    return token.substr(0, open);
}

}  // namespace

Lexicon parse_lexicon(const std::string& text, const std::string& name) {
    Lexicon lexicon;
    std::unordered_map<std::string, size_t> where;
    std::istringstream in(text);
    int64_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a byte-order mark
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        if (line.rfind(";;;", 0) == 0 || line[0] == '#') continue;
        for (char c : line)
            if (static_cast<unsigned char>(c) < 32 && c != '\t')
                bad_line(name, line_no, "control character " + std::to_string(static_cast<int>(c)) + " in the line");
        const char* why = "";  // UTF-8, so that every word can be saved in a checkpoint
        if (const size_t bad = first_invalid_utf8(line, &why); bad != std::string::npos)
            bad_line(name, line_no, std::string(why) + " at byte " + std::to_string(bad + 1) + " (expected UTF-8 text)");
        std::string word;
        std::vector<std::vector<std::string>> prons;
        const size_t tab = line.find('\t');
        if (tab != std::string::npos) {  // WORD<TAB>P1 P2 ...[<TAB>P1 P2 ...]
            word = line.substr(0, tab);
            while (!word.empty() && word.back() == ' ') word.pop_back();
            std::string rest = line.substr(tab + 1);
            for (size_t start = 0;;) {
                const size_t next = rest.find('\t', start);
                auto phones = split_spaces(rest.substr(start, next == std::string::npos ? next : next - start));
                if (!phones.empty()) prons.push_back(std::move(phones));
                if (next == std::string::npos) break;
                start = next + 1;
            }
            if (word.find(' ') != std::string::npos)
                bad_line(name, line_no, "the word '" + word + "' before the tab contains a space");
        } else {  // word PH PH ...
            auto tokens = split_spaces(line);
            word = tokens[0];
            tokens.erase(tokens.begin());
            if (!tokens.empty()) prons.push_back(std::move(tokens));
        }
        if (word.empty()) bad_line(name, line_no, "the word is empty");
        if (prons.empty()) bad_line(name, line_no, "'" + word + "' has no pronunciation (expected WORD PH PH ...)");
        word = lower(strip_alternate(word, name, line_no));
        // (a word of a million letters once ended in std::bad_alloc, naming nothing)
        if (const auto n = static_cast<int64_t>(characters(word).size()); n > kMaxLexiconSymbols)
            bad_line(name, line_no, "a word of " + std::to_string(n) + " characters (at most " +
                                        std::to_string(kMaxLexiconSymbols) + ")");
        for (const auto& p : prons)
            if (static_cast<int64_t>(p.size()) > kMaxLexiconSymbols)
                bad_line(name, line_no, "a pronunciation of " + std::to_string(p.size()) + " phonemes (at most " +
                                            std::to_string(kMaxLexiconSymbols) + ")");
        auto [it, fresh] = where.emplace(word, lexicon.size());
        if (fresh) lexicon.push_back({word, {}});
        for (auto& p : prons) lexicon[it->second].pronunciations.push_back(std::move(p));
    }
    return lexicon;
}

Lexicon load_lexicon(const std::string& path) {
    Lexicon lexicon = parse_lexicon(read_data_file(path, "a lexicon file"), path);
    // An empty split scored "exact 1.0000" on 0 items and exited 0.
    if (lexicon.empty()) throw std::runtime_error(path + ": no entries (expected lines WORD PH PH ...)");
    return lexicon;
}

int word_bucket(const std::string& word) {
    uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
    for (unsigned char c : word) h = (h ^ c) * 1099511628211ULL;
    return static_cast<int>(h % 100);
}

int word_split(const std::string& word) {
    const int bucket = word_bucket(word);
    return bucket < 90 ? 0 : bucket < 95 ? 1 : 2;
}

LexiconSplit split_lexicon(const Lexicon& lexicon) {
    LexiconSplit s;
    for (const auto& e : lexicon) {
        const int k = word_split(e.word);
        (k == 0 ? s.train : k == 1 ? s.dev : s.test).push_back(e);
    }
    return s;
}

LexiconSplit split_train_dev(const Lexicon& lexicon, int64_t dev_percent) {
    if (dev_percent < 1 || dev_percent > 50)
        throw std::invalid_argument("split_train_dev: dev_percent " + std::to_string(dev_percent) +
                                    " is outside [1, 50]");
    LexiconSplit s;
    for (const auto& e : lexicon) (word_bucket(e.word) >= 100 - dev_percent ? s.dev : s.train).push_back(e);
    return s;
}

// ---- pairs and batches ------------------------------------------------------------------

Batch make_batch(const std::vector<Pair>& pairs, const std::vector<size_t>& index) {
    const int64_t B = static_cast<int64_t>(index.size());
    size_t n = 1, T = 1;
    for (size_t i : index) {
        n = std::max(n, pairs[i].source.size());
        T = std::max(T, pairs[i].target.size() + 1);
    }
    Batch b;
    b.index = index;
    b.source = Tensor::zeros(Shape{B, static_cast<int64_t>(n)});  // kPad = 0
    b.target_in = Tensor::zeros(Shape{B, static_cast<int64_t>(T)});
    b.target_out = Tensor::zeros(Shape{B, static_cast<int64_t>(T)});
    for (int64_t r = 0; r < B; ++r) {
        const Pair& p = pairs[index[static_cast<size_t>(r)]];
        real* src = b.source.data() + r * static_cast<int64_t>(n);
        for (size_t j = 0; j < p.source.size(); ++j) src[j] = static_cast<real>(p.source[j]);
        b.source_lengths.push_back(std::max<int64_t>(1, static_cast<int64_t>(p.source.size())));
        real* in = b.target_in.data() + r * static_cast<int64_t>(T);
        real* out = b.target_out.data() + r * static_cast<int64_t>(T);
        in[0] = kBos;
        for (size_t j = 0; j < p.target.size(); ++j) {
            in[j + 1] = static_cast<real>(p.target[j]);
            out[j] = static_cast<real>(p.target[j]);
        }
        out[p.target.size()] = kEos;
    }
    return b;
}

std::vector<Batch> make_batches(const std::vector<Pair>& pairs, int64_t batch_size, Generator* gen) {
    std::vector<size_t> order(pairs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto shuffle = [&](auto& v) {
        if (!gen) return;
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[gen->randint(i)]);
    };
    shuffle(order);
    const size_t bs = static_cast<size_t>(std::max<int64_t>(1, batch_size)), pool = bs * 50;
    std::vector<std::vector<size_t>> groups;
    for (size_t start = 0; start < order.size(); start += pool) {
        const size_t end = std::min(order.size(), start + pool);
        std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end),
                         [&](size_t a, size_t b) { return pairs[a].source.size() < pairs[b].source.size(); });
        for (size_t s = start; s < end; s += bs)
            groups.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(s),
                                order.begin() + static_cast<std::ptrdiff_t>(std::min(end, s + bs)));
    }
    shuffle(groups);
    std::vector<Batch> batches;
    batches.reserve(groups.size());
    for (const auto& g : groups) batches.push_back(make_batch(pairs, g));
    return batches;
}

}  // namespace attn::seq2seq
