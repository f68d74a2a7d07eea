// Test driver for gpulint_binary.h: JSON lines on stdin (the first is meta) -> a binary trace on
// stdout, through the encoder the native collector uses.  With --crash-after N, stop after N
// event lines the way the tool's signal handler does: the open block from `crash_block`, then
// the remaining lines as JSON records written with `header`.
#include "gpulint_binary.h"

#include <cstdio>
#include <iostream>
#include <string>

namespace {
void put(const char* data, size_t n) { fwrite(data, 1, n, stdout); }
}  // namespace

int main(int argc, char** argv) {
    long crash_after = argc == 3 && std::string(argv[1]) == "--crash-after" ? std::stol(argv[2]) : -1;
    static gpulint_binary::BinaryEncoder encoder(put);
    std::string line;
    if (!std::getline(std::cin, line)) return 1;
    encoder.start(line);
    long count = 0;
    bool crashed = false;
    while (std::getline(std::cin, line)) {
        if (crashed) {  // what the signal handler writes for the launches still held
            char head[8];
            gpulint_binary::BinaryEncoder::header(head, static_cast<uint32_t>(line.size()), 'J');
            put(head, sizeof head);
            put(line.data(), line.size());
            continue;
        }
        encoder.event(line);
        if (++count == crash_after) {
            const char* rows = nullptr;
            if (size_t n = encoder.crash_block(&rows)) put(rows, n);
            crashed = true;
        } else if (count % 97 == 0) {
            encoder.close_block();  // a flush now and then, as the tool's timer and syncs do
        }
    }
    if (!crashed) encoder.close_block();
    return 0;
}
