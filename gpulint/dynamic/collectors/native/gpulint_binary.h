// The binary trace variant (docs/trace-format.md, "The binary variant") for the native collector.
//
// The tool builds every event as a JSON line, as the JSON Lines format has it; when the trace is
// binary, `BinaryEncoder::event` turns that line into a record as it is written.  One form of each
// event is enough for the access level's held launches and for the crash path, and the encoder
// has no CUDA in it, so the tests compile it with the host compiler alone.
//
// Free, memcpy, memset, launch, graph_launch, sync, event_record and event_wait lines become
// 96-byte rows gathered in a block (one "E" record); their host stacks and strings go out once,
// in "K" and "S" records, before the first block that names them.  Every other line, and any line
// a row cannot hold exactly, is one "J" record holding the line itself.  A launch's `grid` and
// `block`, which no analysis reads, are not kept in rows.  The rows' host times (`ns`) follow
// their block as a "T" record, one int64 per row (-1 for a row without one).
//
// The open block is a fixed array: `crash_block` writes it without allocating, from a signal
// handler.  Not thread-safe: the tool calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpulint_binary {

inline constexpr char kMagic[8] = {'G', 'L', 'T', 'R', 'A', 'C', 'E', '\x01'};

// The row of tracebin.ROW: same fields, same order, little-endian (every CUDA host is).
struct Row {
    uint8_t kind, flags;
    uint16_t pad;
    uint32_t nreads;
    int64_t stream, t, obj, dst, src;
    uint64_t size, offset, src_offset;
    int32_t api, kernel, site, text, digest;
    uint32_t nwrites;
};
static_assert(sizeof(Row) == 96, "a row is 96 bytes");

enum : uint8_t { HAS_SIZE = 1, HAS_OBJ = 2, HAS_DST = 4, HAS_SRC = 8, ARGS_ONLY = 16, PARAMS_UNREAD = 32,
                 STREAM_TEXT = 64, HAS_STREAM = 128 };

// Writes bytes to the trace (the tool's buffer); one call is one whole record.
using Sink = void (*)(const char* data, size_t n);

// One JSON line of the tool, split into its top-level keys and the raw text of their values.
// The tool writes no whitespace; strings keep their quotes and escapes.
struct Line {
    struct Field {
        std::string_view key, value;
    };
    Field fields[24];
    int count = 0;

    bool parse(std::string_view text) {
        size_t i = 0, n = text.size();
        if (n < 2 || text[0] != '{' || text[n - 1] != '}') return false;
        i = 1;
        while (i < n - 1) {
            if (count == 24 || text[i] != '"') return false;
            size_t key_end = skip_string(text, i);
            if (key_end == 0 || key_end >= n || text[key_end] != ':') return false;
            std::string_view key = text.substr(i + 1, key_end - i - 2);
            size_t value_start = key_end + 1, value_end = skip_value(text, value_start);
            if (value_end == 0) return false;
            fields[count++] = {key, text.substr(value_start, value_end - value_start)};
            i = value_end;
            if (i < n - 1) {
                if (text[i] != ',') return false;
                ++i;
            }
        }
        return true;
    }

    std::string_view get(std::string_view key) const {
        for (int k = 0; k < count; ++k)
            if (fields[k].key == key) return fields[k].value;
        return {};
    }

  private:
    // Past the string starting at `at` (its closing quote), or 0.
    static size_t skip_string(std::string_view text, size_t at) {
        for (size_t i = at + 1; i < text.size(); ++i) {
            if (text[i] == '\\') ++i;
            else if (text[i] == '"') return i + 1;
        }
        return 0;
    }
    // Past the value starting at `at`, or 0.
    static size_t skip_value(std::string_view text, size_t at) {
        if (at >= text.size()) return 0;
        if (text[at] == '"') return skip_string(text, at);
        int depth = 0;
        for (size_t i = at; i < text.size(); ++i) {
            char c = text[i];
            if (c == '"') {
                i = skip_string(text, i);
                if (i == 0) return 0;
                --i;
            } else if (c == '[' || c == '{') {
                ++depth;
            } else if (c == ']' || c == '}') {
                if (depth == 0) return i;  // the end of the enclosing object
                if (--depth == 0) return i + 1;
            } else if (c == ',' && depth == 0) {
                return i;
            }
        }
        return 0;
    }
};

class BinaryEncoder {
  public:
    static constexpr size_t kRows = 1024, kAccesses = 8192;

    explicit BinaryEncoder(Sink sink) : sink_(sink) {}

    // The file's first bytes, then the meta line as its record.
    void start(std::string_view meta) {
        sink_(kMagic, sizeof kMagic);
        record('M', meta);
    }

    // One event line.
    void event(std::string_view line) {
        Line parsed;
        Row row{};
        std::vector<int64_t>& ids = scratch_ids_;
        ids.clear();
        int64_t ns = -1;
        if (parsed.parse(line) && to_row(parsed, row, ids, ns) && ids.size() <= kAccesses) {
            write_tables();
            if (rows_ == kRows || accesses_ + ids.size() > kAccesses) close_block();
            block_ns_[rows_] = ns;
            block_rows_[rows_++] = row;
            memcpy(block_accesses_ + accesses_, ids.data(), ids.size() * sizeof(int64_t));
            accesses_ += ids.size();
            return;
        }
        forget_new_tables();
        close_block();
        record('J', line);
    }

    // The open block as a record (before a flush, a JSON record, the end).
    void close_block() {
        if (!rows_) return;
        size_t n = assemble();
        rows_ = accesses_ = 0;
        sink_(out_, n);
    }

    // The open block, assembled without allocating, for a signal handler to write; 0 if none.
    size_t crash_block(const char** data) {
        if (!rows_) return 0;
        size_t n = assemble();
        rows_ = accesses_ = 0;
        *data = out_;
        return n;
    }

    // A record header for `n` payload bytes, for a signal handler writing a line as a JSON record.
    static void header(char out[8], uint32_t n, char tag) {
        memcpy(out, &n, 4);
        out[4] = tag;
        out[5] = out[6] = out[7] = 0;
    }

    // A forked child: nothing of the parent's block is its own.
    void forget() { rows_ = accesses_ = 0; }

  private:
    Sink sink_;
    Row block_rows_[kRows];
    int64_t block_ns_[kRows];
    int64_t block_accesses_[kAccesses];
    size_t rows_ = 0, accesses_ = 0;
    char out_[8 + 4 + kRows * sizeof(Row) + kAccesses * sizeof(int64_t) + 8 + kRows * sizeof(int64_t)];
    std::unordered_map<std::string, int32_t> strings_, stacks_;
    std::vector<std::string_view> new_strings_, new_stacks_;  // views of the maps' keys
    std::vector<int64_t> scratch_ids_;

    size_t assemble() {
        uint32_t count = static_cast<uint32_t>(rows_);
        size_t payload = 4 + rows_ * sizeof(Row) + accesses_ * sizeof(int64_t);
        header(out_, static_cast<uint32_t>(payload), 'E');
        memcpy(out_ + 8, &count, 4);
        memcpy(out_ + 12, block_rows_, rows_ * sizeof(Row));
        memcpy(out_ + 12 + rows_ * sizeof(Row), block_accesses_, accesses_ * sizeof(int64_t));
        size_t n = 8 + payload;
        bool timed = false;
        for (size_t k = 0; k < rows_ && !timed; ++k) timed = block_ns_[k] >= 0;
        if (timed) {  // the times record right after its rows
            header(out_ + n, static_cast<uint32_t>(rows_ * sizeof(int64_t)), 'T');
            memcpy(out_ + n + 8, block_ns_, rows_ * sizeof(int64_t));
            n += 8 + rows_ * sizeof(int64_t);
        }
        return n;
    }

    void record(char tag, std::string_view payload) {
        std::string out(8, '\0');
        header(out.data(), static_cast<uint32_t>(payload.size()), tag);
        out.append(payload);
        sink_(out.data(), out.size());
    }

    // Strings and stacks first named by the row just made, as table records (JSON lists of the
    // values' own JSON text).
    void write_tables() {
        for (auto* pending : {&new_strings_, &new_stacks_}) {
            if (pending->empty()) continue;
            std::string list = "[";
            for (size_t k = 0; k < pending->size(); ++k) {
                if (k) list += ',';
                list.append((*pending)[k]);
            }
            list += ']';
            record(pending == &new_strings_ ? 'S' : 'K', list);
            pending->clear();
        }
    }

    // A line that went as JSON after all: entries it named must not stay unwritten in the tables.
    void forget_new_tables() {
        for (std::string_view name : new_strings_) strings_.erase(std::string(name));
        for (std::string_view name : new_stacks_) stacks_.erase(std::string(name));
        new_strings_.clear();
        new_stacks_.clear();
    }

    static int32_t intern(std::unordered_map<std::string, int32_t>& table, std::vector<std::string_view>& pending,
                          std::string_view text) {
        auto found = table.find(std::string(text));
        if (found != table.end()) return found->second;
        int32_t index = static_cast<int32_t>(table.size());
        auto placed = table.emplace(std::string(text), index).first;
        pending.push_back(placed->first);
        return index;
    }

    static bool is_string(std::string_view v) { return v.size() >= 2 && v.front() == '"' && v.back() == '"'; }

    static bool unsigned_value(std::string_view v, uint64_t& out) {
        if (v.empty() || v.size() > 20) return false;
        uint64_t value = 0;
        for (char c : v) {
            if (c < '0' || c > '9') return false;
            uint64_t next = value * 10 + static_cast<uint64_t>(c - '0');
            if (next / 10 != value) return false;  // past 2**64
            value = next;
        }
        out = value;
        return true;
    }

    static bool signed_value(std::string_view v, int64_t& out) {
        bool negative = !v.empty() && v[0] == '-';
        uint64_t magnitude;
        if (!unsigned_value(negative ? v.substr(1) : v, magnitude)) return false;
        if (magnitude > (negative ? (1ull << 63) : (1ull << 63) - 1)) return false;
        out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
        return true;
    }

    static bool id_list(std::string_view v, std::vector<int64_t>& out, uint32_t& n) {
        if (v.size() < 2 || v.front() != '[' || v.back() != ']') return false;
        size_t before = out.size();
        std::string_view rest = v.substr(1, v.size() - 2);
        while (!rest.empty()) {
            size_t comma = rest.find(',');
            int64_t id;
            if (!signed_value(rest.substr(0, comma), id)) return false;
            out.push_back(id);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            if (comma != std::string_view::npos && rest.empty()) return false;
        }
        n = static_cast<uint32_t>(out.size() - before);
        return true;
    }

    // The fields each row kind may hold (`ev` and `t` are in all); a line with any other field,
    // except a launch's grid and block, goes as JSON.
    static int kind_code(std::string_view ev) {
        static constexpr std::string_view kinds[] = {"\"free\"", "\"memcpy\"", "\"memset\"", "\"launch\"",
                                                     "\"graph_launch\"", "\"sync\"", "\"event_record\"",
                                                     "\"event_wait\""};
        for (int k = 0; k < 8; ++k)
            if (ev == kinds[k]) return k + 1;
        return 0;
    }

    static bool allowed(int kind, std::string_view key) {
        if (key == "ev" || key == "t" || key == "ns" || key == "stream" || key == "site" || key == "api") return true;
        switch (kind) {
            case 1: return key == "obj";
            case 2: return key == "dst" || key == "src" || key == "size" || key == "kind" || key == "dst_offset" ||
                           key == "src_offset" || key == "digest";
            case 3: return key == "obj" || key == "size" || key == "offset";
            case 4:
            case 5: return key == "kernel" || key == "reads" || key == "writes" || key == "args_only" ||
                           key == "params_unread" || key == "grid" || key == "block";
            case 6: return key == "scope" || key == "event";
            default: return key == "event";
        }
    }

    bool to_row(const Line& line, Row& row, std::vector<int64_t>& ids, int64_t& ns) {
        int kind = kind_code(line.get("ev"));
        if (!kind) return false;
        for (int k = 0; k < line.count; ++k)
            if (!allowed(kind, line.fields[k].key)) return false;
        row.kind = static_cast<uint8_t>(kind);
        uint64_t t;
        if (!unsigned_value(line.get("t"), t) || t >= (1ull << 63)) return false;
        row.t = static_cast<int64_t>(t);
        std::string_view v = line.get("ns");
        if (!v.empty() && (!signed_value(v, ns) || ns < 0)) return false;  // a bad time goes as JSON, to be warned of
        v = line.get("stream");
        if (!v.empty()) {
            if (is_string(v)) {
                row.stream = intern(strings_, new_strings_, v);
                row.flags |= STREAM_TEXT | HAS_STREAM;
            } else if (signed_value(v, row.stream)) {
                row.flags |= HAS_STREAM;
            } else {
                return false;
            }
        }
        row.site = -1;
        v = line.get("site");
        if (!v.empty()) {
            if (v.front() != '[') return false;
            row.site = intern(stacks_, new_stacks_, v);
        }
        // api, kernel, the kind's text (a copy's direction, a synchronisation's scope), digest
        const bool is_event_kind = kind >= 6;
        std::string_view text_key = kind == 6 ? "scope" : "kind";
        int32_t* slots[] = {&row.api, &row.kernel, &row.text, &row.digest};
        std::string_view keys[] = {"api", "kernel", text_key, "digest"};
        for (int k = 0; k < 4; ++k) {
            v = line.get(keys[k]);
            *slots[k] = -1;
            if (v.empty() || (k == 3 && v == "null")) continue;
            if (!is_string(v)) return false;
            *slots[k] = intern(strings_, new_strings_, v);
        }
        v = line.get("size");
        if (!v.empty()) {
            if (!unsigned_value(v, row.size)) return false;
            row.flags |= HAS_SIZE;
        }
        struct Id {
            std::string_view key;
            int64_t* slot;
            uint8_t bit;
        } id_fields[] = {{is_event_kind ? "event" : "obj", &row.obj, HAS_OBJ}, {"dst", &row.dst, HAS_DST},
                         {"src", &row.src, HAS_SRC}};
        for (const Id& id : id_fields) {
            v = line.get(id.key);
            if (v.empty() || (v == "null" && id.key != "obj")) continue;
            if (!signed_value(v, *id.slot)) return false;
            row.flags |= id.bit;
        }
        if ((kind == 1 || kind == 3) && !(row.flags & HAS_OBJ)) return false;
        if (kind == 2 && !(row.flags & HAS_SIZE)) return false;
        v = line.get(kind == 3 ? "offset" : "dst_offset");
        if (!v.empty() && !unsigned_value(v, row.offset)) return false;
        v = line.get("src_offset");
        if (!v.empty() && !unsigned_value(v, row.src_offset)) return false;
        v = line.get("reads");
        if (!v.empty() && !id_list(v, ids, row.nreads)) return false;
        v = line.get("writes");
        if (!v.empty() && !id_list(v, ids, row.nwrites)) return false;
        struct Flag {
            std::string_view key;
            uint8_t bit;
        } flags[] = {{"args_only", ARGS_ONLY}, {"params_unread", PARAMS_UNREAD}};
        for (const Flag& flag : flags) {
            v = line.get(flag.key);
            if (v == "true") row.flags |= flag.bit;
            else if (!v.empty() && v != "false") return false;
        }
        return true;
    }
};

}  // namespace gpulint_binary
