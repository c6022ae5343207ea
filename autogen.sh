#!/bin/sh
# Generate the build system (configure, Makefile.in).
set -e
cd "$(dirname "$0")"
mkdir -p config/m4 config/aux
autoreconf -fi
