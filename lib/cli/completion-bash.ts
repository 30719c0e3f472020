/**
 * The bash completion script. Plain bash (no bash-completion package needed). bash splits words at
 * `:` and `=` too, so the value being typed is read from COMP_LINE instead, and replies are trimmed
 * to the part readline replaces (after the last `:` or `=`). The script is put together from named parts,
 * one for each thing it completes; each part is whole lines, ending in a newline.
 */
import type { CompletionSpec, FlagSpec } from "./completion-types.ts";

const words = (list: readonly string[]) => list.join(" ");
const flagWords = (flags: FlagSpec[]) => words(flags.flatMap((f) => [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])]));

/** A `case` pattern for every spelling of the flags whose value is of one kind. */
function spellings(spec: CompletionSpec, kind: string): string {
  const all = [...spec.global, ...spec.commands.flatMap((c) => c.flags)].filter((f) => f.value === kind);
  const names = [...new Set(all.flatMap((f) => [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])]))];
  return names.length ? names.join("|") : "--no-such-flag";
}

/** How to load the script. */
const loadingNote = (program: string) => `# ${program} completion for bash. Load it with: source <(${program} completion bash)
# or save it as ~/.local/share/bash-completion/completions/${program}
`;

/** `<fn>_names`: the key names in the store, for --name. */
const namesFunction = (fn: string) => `# Key names from the store: the first field of \`apikey --list\` on a pipe. Silent on any error, and
# given at most 3 seconds where timeout(1) exists (a remote store may be slow).
${fn}_names() {
  local args=() i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in --store|--url) args+=("\${COMP_WORDS[i]}" "\${COMP_WORDS[i+1]}") ;; esac
  done
  local run=()
  command -v timeout >/dev/null 2>&1 && run=(timeout 3)
  "\${run[@]}" "\${COMP_WORDS[0]}" apikey --list "\${args[@]}" </dev/null 2>/dev/null | cut -f1
}
`;

/** `<fn>_values`: the roles and resource:action permissions, for --roles and --permissions. */
const valuesFunction = (spec: CompletionSpec, fn: string) => `# Comma-separated values: completes the last item of the list typed so far ($2).
${fn}_values() {
  local head="" item="$2" v
  if [[ $2 == *,* ]]; then head="\${2%,*},"; item="\${2##*,}"; fi
  case $1 in
    roles) for v in ${words(spec.roles)}; do [[ $v == "$item"* ]] && printf '%s\\n' "$head$v"; done ;;
    permissions)
      if [[ $item == *:* ]]; then
        local res="\${item%%:*}"
        for v in ${words(spec.actions)}; do [[ $res:$v == "$item"* ]] && printf '%s\\n' "$head$res:$v"; done
      else
        for v in ${words(spec.resources)}; do [[ $v == "$item"* ]] && printf '%s\\n' "$head$v:"; done
      fi ;;
  esac
}
`;

/** Sets `cur`, `word` and `prev`: the word being typed and the one before it, by spaces only. */
const readWords = `  local cur="\${COMP_WORDS[COMP_CWORD]}" line="\${COMP_LINE:0:COMP_POINT}"
  # The whole word and the one before it, by spaces only (bash's own words also break at : and =).
  local word="\${line##*[[:space:]]}" rest="\${line%"\${line##*[[:space:]]}"}"
  rest="\${rest%"\${rest##*[![:space:]]}"}"
  local prev="\${rest##*[[:space:]]}"
  if [[ $word == --*=* ]]; then prev="\${word%%=*}"; word="\${word#*=}"; fi
`;

/** Sets `cmd`: the command typed so far, if any. */
const findCommand = (spec: CompletionSpec) => `  local cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in ${spec.commands.map((c) => c.name).join("|")}) cmd="\${COMP_WORDS[i]}"; break ;; esac
  done
`;

/** After a flag that takes a key name: the names in the store. */
const completeNames = (spec: CompletionSpec, fn: string) => `  # --name: key names, which may hold spaces (escaped unless the word was opened with a quote).
  local before="\${COMP_WORDS[COMP_CWORD-1]}"
  case $before in ${spellings(spec, "names")}) before=names ;; esac
  if [[ $before == names ]]; then
    local quote="" name
    [[ $cur == [\\"\\']* ]] && quote=1 && cur="\${cur:1}"
    while IFS= read -r name; do
      # Only what a key name may be (letters, digits, spaces): a name listed by a hostile service must
      # never reach the command line as quotes, ; or $(...), quoted or not.
      [[ -n $name && $name != *[![:alnum:][:space:]]* ]] || continue
      [[ $name == "$cur"* ]] || continue
      if [[ -n $quote ]]; then COMPREPLY+=("$name"); else COMPREPLY+=("$(printf '%q' "$name")"); fi
    done < <(${fn}_names)
    return 0
  fi
`;

/** After --roles or --permissions: their values; after a flag that takes a file: files; after another flag with a value: nothing. */
const completeValues = (spec: CompletionSpec, fn: string) => `  local kind=""
  case $prev in
    ${spellings(spec, "roles")}) kind=roles ;;
    ${spellings(spec, "permissions")}) kind=permissions ;;
    ${spellings(spec, "files")}) compopt -o default 2>/dev/null; return 0 ;;
    ${spellings(spec, "none")}) return 0 ;;
  esac
  if [[ -n $kind ]]; then
    # readline replaces only what follows the last : or = of the word.
    local keep="\${word%"\${word##*[:=]}"}" v
    while IFS= read -r v; do COMPREPLY+=("\${v#"$keep"}"); done < <(${fn}_values "$kind" "$word")
    [[ \${COMPREPLY[0]} == *: ]] && compopt -o nospace 2>/dev/null
    return 0
  fi
`;

/** Otherwise: the flags of the command typed (and the global ones), the commands, or the shells of `completion`. */
function completeFlagsAndCommands(spec: CompletionSpec): string {
  const perCommand = spec.commands.map((c) => `    ${c.name}) flags="${flagWords(c.flags)} ${flagWords(spec.global)}" ;;`).join("\n");
  return `  local flags="${flagWords(spec.global)}"
  case $cmd in
${perCommand}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "${spec.commands.map((c) => c.name).join(" ")}" -- "$cur"))
  elif [[ $cmd == completion ]]; then
    COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
  fi
  return 0
`;
}

/** `<fn>`, the function bash calls to complete the command line. */
const completionFunction = (spec: CompletionSpec, fn: string) => `${fn}() {
  COMPREPLY=()
${readWords}
${findCommand(spec)}
${completeNames(spec, fn)}${completeValues(spec, fn)}
${completeFlagsAndCommands(spec)}}
`;

/** The bash completion script for `spec`. */
export function bashScript(spec: CompletionSpec): string {
  const fn = `_${spec.program.replaceAll("-", "_")}`;
  const parts = [loadingNote(spec.program), namesFunction(fn), valuesFunction(spec, fn), completionFunction(spec, fn)];
  return `${parts.join("\n")}complete -F ${fn} ${spec.program}\n`;
}
