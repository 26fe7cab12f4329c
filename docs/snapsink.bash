# bash completion for snapsink. Installed by cmake --install into
# share/bash-completion/completions/snapsink. Every command and option of
# `snapsink COMMAND --help` is listed here (tests/cli_newcomer_test.cc checks it).
_snapsink() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  fi
  local commands="init ingest seal publish run backfill query inspect verify gc rollback upgrade status metrics gaps metric serve"
  if [[ $cword -eq 1 ]]; then
    COMPREPLY=($(compgen -W "$commands --help --help-all --version" -- "$cur"))
    return
  fi
  local command="${words[1]}" opts=""
  # Every command takes a root, and these for a root in a bucket.
  local bucket_opts="--endpoint --region --access-key-id --secret-access-key-file"
  case "$command" in
    init) opts="--window --lateness --on-gap --id-horizon --producer-retention --retain --max-ahead --metric" ;;
    ingest) opts="--source --commit-every --on-error --quiet --id-from-content --state" ;;
    seal) opts="--window --all --state" ;;
    publish) opts="--state" ;;
    run) opts="--source --commit-every --on-error --final --quiet --follow --publish-every --poll --serve --id-from-content --kafka --topic --group --kafka-start --kafka-config --kafka-timeout --on-split-producer --state --checkpoint-every --keep-generations" ;;
    backfill) opts="--version --source --from --to --commit-every --quiet --dry-run --state" ;;
    query) opts="--window --metric --key --generation --format --from --to --metric-prefix --key-prefix --rollup --quantile --cache-dir --cache-size" ;;
    inspect) opts="--json --all" ;;
    verify) opts="--state" ;;
    gc) opts="--keep-generations --producers-idle --retain --max-ahead --state --min-age" ;;
    rollback) opts="--generation --dry-run --state" ;;
    upgrade) opts="--dry-run" ;;
    status) opts="--json --html --state" ;;
    metrics) opts="" ;;
    gaps) opts="--producer --epoch --range --source --state" ;;
    metric) opts="--kind --accuracy --precision --json --state" ;;
    serve) opts="--listen --threads --max-connections --header-timeout --body-timeout --read-timeout --write-timeout --keep-alive-timeout --max-request-bytes --max-header-bytes --max-answer-bytes --max-rows --tls-cert --tls-key --tls-ciphers --token-file --insecure --access-log --quiet --cache-dir --cache-size --poll" ;;
  esac
  opts="$opts $bucket_opts"
  case "$prev" in
    --on-gap) COMPREPLY=($(compgen -W "accept stop" -- "$cur")); return ;;
    --on-error) COMPREPLY=($(compgen -W "skip stop" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "table json csv" -- "$cur")); return ;;
    --kafka-start) COMPREPLY=($(compgen -W "earliest latest" -- "$cur")); return ;;
    --kind) COMPREPLY=($(compgen -W "sum minmax quantiles distinct" -- "$cur")); return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
    return
  fi
  # The word after ROOT: inspect's WHAT, gaps' ACTION.
  if [[ $cword -eq 3 && "$command" == inspect ]]; then
    COMPREPLY=($(compgen -W "producers gaps sources windows ids snapshots generations metrics" -- "$cur"))
    return
  fi
  if [[ $cword -eq 3 && "$command" == gaps ]]; then
    COMPREPLY=($(compgen -W "accept" -- "$cur"))
    return
  fi
  if [[ $cword -eq 3 && "$command" == metric ]]; then
    COMPREPLY=($(compgen -W "set list" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _snapsink snapsink
