#!/usr/bin/env bash
# Installs what tpl needs to build and test, from Debian's packages (idempotent; run as root).
set -euo pipefail
pkgs=(re2c lemon meson ninja-build gcc clang libclang-rt-14-dev pkg-config libutf8proc-dev libjansson-dev libonig-dev libgmp-dev libxxhash-dev unicode-data python3 valgrind time
      libsqlite3-dev libpq-dev postgresql libgettextpo-dev gettext  # the prompt store (issue 19)
      python3-dev python3-pytest python3-jinja2 python3-markupsafe python3-mesonpy python3-venv patchelf  # the Python package (issue 17)
      ruby ruby-dev ruby-minitest ruby-erubi)  # the Ruby gem (issue 20): headers, its test suite, the Erubi benchmark
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
