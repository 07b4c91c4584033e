#!/usr/bin/env bash
# Extra CI checks run after `packaging/dev.sh test` (see docs/reliability.md):
#   1. ASan + UBSan: the whole test suite built with -fsanitize=address,undefined (preset "asan",
#      the team's compiler (GCC) at -O1)
#   2. fuzz smoke: every libFuzzer target (tests/fuzz) on its committed corpus for FUZZ_SECONDS each
#   3. packaging: cpack DEB + TGZ in build/, install the .deb, run the installed memx
# Environment: SECTIONS (default "asan fuzz package"), FUZZ_SECONDS (default 20), JOBS (default 2).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
sections=${SECTIONS:-asan fuzz package}
fuzz_seconds=${FUZZ_SECONDS:-20}
jobs=${JOBS:-2}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

section() { echo; echo "==================== ci-extra: $* ===================="; }
timer_start() { t0=$(date +%s); }
timer_end() { echo "ci-extra: section '$1' took $(( $(date +%s) - t0 )) s"; }
wants() { [[ " $sections " == *" $1 "* ]]; }

bash packaging/install-deps.sh

# ---------------------------------------------------------------------------------------------
if wants asan; then
    section "1/3 ASan + UBSan test suite (preset asan: -O1, build-asan/)"
    timer_start
    cmake --preset asan >/dev/null
    # Everything CTest runs (memx + every tst_* incl. the widget tests); the GUI application
    # itself is not needed by any test and is skipped to save build time.
    targets=$(ninja -C build-asan -t targets all | sed -n 's/^\(tst_[a-z0-9_]*\): .*/\1/p' | grep -v _autogen | sort -u)
    cmake --build build-asan -j "$jobs" --target memx $targets
    timer_end asan-build
    timer_start
    # ASAN/LSAN/UBSAN_OPTIONS and QTEST_FUNCTION_TIMEOUT come from the test preset
    # (CMakePresets.json): leak detection on, abort on the first error, LeakSanitizer
    # suppressions from packaging/lsan.supp (none needed).
    ctest --preset asan -j "$jobs"
    timer_end asan-ctest
fi

# ---------------------------------------------------------------------------------------------
if wants fuzz; then
    section "2/3 fuzz smoke (clang libFuzzer + ASan + UBSan, build-fuzz/, ${fuzz_seconds}s per target)"
    timer_start
    # Only the core and the fuzz targets are built with clang (no Qt, no tests, no GUI).
    cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER=clang++ -DMEMX_FUZZ=ON -DMEMX_BUILD_GUI=OFF -DMEMX_BUILD_TESTS=ON \
        -DMEMX_BUILD_BENCH=OFF >/dev/null
    cmake --build build-fuzz -j "$jobs" --target memx_fuzz_all
    timer_end fuzz-build
    timer_start
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    failed=()
    for corpus in tests/fuzz/corpus/*/; do
        name=$(basename "$corpus")
        bin=build-fuzz/tests/fuzz/fuzz_$name
        work=$(mktemp -d)
        echo "--- fuzz_$name: $(ls "$corpus" | wc -l) corpus files"
        # New inputs go to a scratch folder; the committed corpus is only read.
        if ! "$bin" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
                -artifact_prefix="$work/" -print_final_stats=1 "$work" "$corpus" >"$work/log" 2>&1; then
            tail -n 60 "$work/log"
            for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
                [ -e "$a" ] && { echo "reproducer $a (base64):"; base64 "$a" | head -c 4000; echo; }
            done
            failed+=("$name")
        else
            grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$work/log" | tr '\n' ' '; echo
        fi
        rm -rf "$work"
    done
    unset ASAN_OPTIONS UBSAN_OPTIONS
    if [ ${#failed[@]} -gt 0 ]; then
        echo "ci-extra: fuzz targets failed: ${failed[*]}" >&2
        exit 1
    fi
    timer_end fuzz-run
fi

# ---------------------------------------------------------------------------------------------
if wants package; then
    section "3/3 packaging: cpack DEB + TGZ, install the .deb, run the installed memx"
    timer_start
    if [ ! -f build/CMakeCache.txt ]; then cmake --preset default >/dev/null; fi
    cmake --build build -j "$jobs" --target memx memx-workbench
    (cd build && rm -f memx-workbench_*.deb memx-workbench-*.tar.gz && cpack -G "DEB;TGZ")
    deb=$(ls build/memx-workbench_*.deb)
    ls -l "$deb" build/memx-workbench-*.tar.gz
    dpkg-deb --info "$deb"
    # Stripped (CPACK_STRIP_FILES): no .debug_info section left in the packaged binaries.
    ( x=$(mktemp -d) && dpkg-deb -x "$deb" "$x" && for b in "$x"/usr/bin/*; do
        if readelf -S "$b" | grep -q '\.debug_info'; then echo "ci-extra: $b is not stripped" >&2; exit 1; fi
      done && rm -rf "$x" )
    dpkg-deb --contents "$deb"
    tar -tzf build/memx-workbench-*.tar.gz >/dev/null
    if command -v desktop-file-validate >/dev/null; then
        desktop-file-validate packaging/memx-workbench.desktop
    fi
    if command -v appstreamcli >/dev/null; then
        appstreamcli validate --no-net --pedantic packaging/io.github.memx.Workbench.metainfo.xml
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq "./$deb" || { $SUDO dpkg -i "$deb" || true; $SUDO apt-get -f install -y -qq; }
    (
        cd "$(mktemp -d)" # nothing from the source or build tree is reachable from here
        /usr/bin/memx --version
        /usr/bin/memx search --cluster /usr/share/memx/sample_clusters/paper-20gpu-nvidia-amd.json \
            --model llama2-7b --top 3
        test -x /usr/bin/memx-workbench
        test -f /usr/share/applications/memx-workbench.desktop
        test -f /usr/share/metainfo/io.github.memx.Workbench.metainfo.xml
        test -f /usr/share/icons/hicolor/scalable/apps/memx-workbench.svg
    )
    timer_end package
fi

echo
echo "ci-extra: all sections passed (${sections})"
