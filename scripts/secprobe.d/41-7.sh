# shellcheck shell=bash
# #41 item 7, sourced by scripts/secprobe.sh (which defines as_user, asu, judge, report,
# stop, $W, $U and $SYSPERF): net.connect@unix listens at a random abstract name, which
# /proc/net/unix lists for every user. The throwaway user connects to each such listener of
# root's run (a worker's: its parent is the run), up to three times each, while the run
# measures net.connect@unix. A connection served as one of the client's left the client's
# last waiting for an accept until the trial timed out: the run failed. Held when the run
# succeeds after the attacker connected; inconclusive when the attacker never did.
probe_41_7() {
  local what="another user's connections to net.connect@unix" d=$W/i41-7 hit="" r a rc made
  cat > "$d/connect.pl" <<'EOF'
# The attacker: connects to the net listeners of the workers of process ARGV[0], listed in
# /proc/net/unix, for ARGV[1] seconds; prints each connection made.
use strict;
use Socket;
$| = 1;
my ($parent, $secs) = @ARGV;
my $until = time + $secs;
my %tries;
while (time < $until) {
    open(my $t, '<', '/proc/net/unix') or die "/proc/net/unix: $!";
    my @names = grep { /^\@sysperf-\d+-net-/ } map { (split)[7] // '' } <$t>;
    close $t;
    for my $name (@names) {
        next if ($tries{$name} // 0) >= 3;
        my ($pid) = $name =~ /^\@sysperf-(\d+)-/;
        open(my $st, '<', "/proc/$pid/stat") or next;
        my $stat = <$st>;
        close $st;
        my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
        next unless $f[1] == $parent;
        $tries{$name}++;
        socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
        print "$name\n" if connect($s, pack_sockaddr_un("\0" . substr($name, 1)));
        close $s;
    }
    select(undef, undef, undef, 0.002);
}
EOF
  chmod 644 "$d/connect.pl"
  "$SYSPERF" run --suite net.connect@unix --min-time 0.3 --trials 3 --timeout 10 \
    --db "$d/s.db" >"$d/run.out" 2>"$d/run.err" &
  r=$!
  "${asu[@]}" perl "$d/connect.pl" "$r" 120 >"$d/made" 2>"$d/attacker.err" &
  a=$!
  bg+=("$a")
  wait "$r"
  rc=$?
  stop "$a"
  made=$(wc -l <"$d/made")
  if [ "$rc" != 0 ] || grep -q 'timed out' "$d/run.out" "$d/run.err"; then
    hit="root's run exited $rc after $made connections of the attacker's: $(grep -h -m1 'timed out\|failed\|error' "$d/run.out" "$d/run.err" | head -1 | cut -c1-120)"
  fi
  if [ "$made" = 0 ]; then
    report "41.7" "$what" inconclusive "the attacker never connected to a listener of the run (run exit $rc: $(head -1 "$d/run.err" | cut -c1-80); $(head -1 "$d/attacker.err"))"
  else
    judge "41.7" "$what" "$hit"
  fi
}
