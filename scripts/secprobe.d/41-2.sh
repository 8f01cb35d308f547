# shellcheck shell=bash
# #41 item 2: the playbook's package path. Replayed by the deploy test that plays the attack:
# on a test host (an sshd in a network namespace with a /tmp of its own) user nobody plants
# /tmp/sysperf.deb and swaps in a package of theirs once the play has written there; the test
# checks whose package's install script ran. Needs cargo, ansible-playbook and sshd (what
# .ci/run installs); inconclusive without them. Sourced by scripts/secprobe.sh.
probe_41_2() {
  local what="the playbook's package path (a .deb planted in /tmp)" t
  t=deploy::the_package_is_installed_from_a_directory_only_root_may_use_not_a_file_planted_in_tmp
  if ! command -v cargo >/dev/null || ! command -v ansible-playbook >/dev/null || [ ! -x /usr/sbin/sshd ]; then
    report 41.2 "$what" inconclusive "needs cargo, ansible-playbook and /usr/sbin/sshd"
    return
  fi
  (cd "$here" && CI=true cargo test -q --test it -- "$t" --exact) >"$W/i41-2/test.out" 2>&1
  if grep -q '^test result: ok. 1 passed' "$W/i41-2/test.out"; then
    report 41.2 "$what" held
  elif grep -q 'panicked' "$W/i41-2/test.out"; then
    report 41.2 "$what" broken "$(grep -A1 panicked "$W/i41-2/test.out" | tail -1 | cut -c1-200)"
  else
    report 41.2 "$what" inconclusive "the deploy test did not run: $(tail -1 "$W/i41-2/test.out" | cut -c1-150)"
  fi
}
