/**
 * The zsh and fish completion scripts, from the same spec as bash (lib/cli/completion-script.ts).
 * Key names come from `service-api apikey --list` on a pipe (first field), silent on error.
 */
import type { CompletionSpec, FlagSpec } from "./completion-types.ts";

const single = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
const spellings = (f: FlagSpec) => [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])];

function byKind(spec: CompletionSpec, kind: string): string {
  const names = new Set([...spec.global, ...spec.commands.flatMap((c) => c.flags)].filter((f) => f.value === kind).flatMap(spellings));
  return names.size ? [...names].join("|") : "--no-such-flag";
}

export function zshScript(spec: CompletionSpec): string {
  const fn = `_${spec.program.replaceAll("-", "_")}`;
  const describe = (flags: FlagSpec[]) =>
    flags.flatMap((f) => spellings(f).map((s) => single(`${s.replace(/:/g, "\\:")}:${f.help.replace(/:/g, "\\:")}`))).join(" ");
  const perCommand = spec.commands.map((c) => `    ${c.name}) flags=(${describe(c.flags)} ${describe(spec.global)}) ;;`).join("\n");
  return `#compdef ${spec.program}
# ${spec.program} completion for zsh. Load it with: source <(${spec.program} completion zsh)
# or save it as _${spec.program} in a directory of $fpath.

${fn}_names() {
  local -a args; local i
  for ((i = 2; i < CURRENT; i++)); do
    case $words[i] in --store|--url) args+=($words[i] $words[i+1]) ;; esac
  done
  local -a run; (( $+commands[timeout] )) && run=(timeout 3)
  $run $words[1] apikey --list $args </dev/null 2>/dev/null | cut -f1
}

${fn}() {
  local prev=$words[CURRENT-1] cur=$words[CURRENT] cmd="" i
  for ((i = 2; i < CURRENT; i++)); do
    case $words[i] in ${spec.commands.map((c) => c.name).join("|")}) cmd=$words[i]; break ;; esac
  done
  if [[ $cur == --*=* ]]; then prev=\${cur%%=*}; compset -P '*='; fi
  case $prev in
    ${byKind(spec, "names")})
      local -a names; names=(\${(f)"$(${fn}_names)"}); compadd -a names; return ;;
    ${byKind(spec, "roles")})
      compset -P '*,'; compadd -S '' -- ${spec.roles.join(" ")}; return ;;
    ${byKind(spec, "permissions")})
      compset -P '*,'
      if compset -P '*:'; then compadd -S '' -- ${spec.actions.join(" ")}; else compadd -S ':' -- ${spec.resources.join(" ")}; fi
      return ;;
    ${byKind(spec, "files")}) _files; return ;;
    ${byKind(spec, "none")}) return ;;
  esac
  local -a flags; flags=(${describe(spec.global)})
  case $cmd in
${perCommand}
  esac
  if [[ $cur == -* ]]; then _describe -t flags flag flags
  elif [[ -z $cmd ]]; then
    local -a cmds; cmds=(${spec.commands.map((c) => single(`${c.name}:${c.description}`)).join(" ")}); _describe -t commands command cmds
  elif [[ $cmd == completion ]]; then compadd -- bash zsh fish
  fi
}

if (( $+functions[compdef] )); then compdef ${fn} ${spec.program}; fi
`;
}

export function fishScript(spec: CompletionSpec): string {
  const p = spec.program;
  const fn = `__${p.replaceAll("-", "_")}`;
  const names = spec.commands.map((c) => c.name).join(" ");
  const value = (f: FlagSpec) => {
    switch (f.value) {
      case "names": return ` -x -a '(${fn}_names)'`;
      case "roles": return ` -x -a '(${fn}_values roles)'`;
      case "permissions": return ` -x -a '(${fn}_values permissions)'`;
      case "files": return " -r -F";
      case "none": return " -x";
      default: return "";
    }
  };
  const line = (f: FlagSpec, when: string) =>
    `complete -c ${p} -n ${single(when)} -l ${f.long}${f.short ? ` -s ${f.short}` : ""}${value(f)} -d ${single(f.help)}`;
  return `# ${p} completion for fish. Save it as ~/.config/fish/completions/${p}.fish
# or load it with: ${p} completion fish | source

# Key names from the store: the first field of \`apikey --list\` on a pipe; silent on error.
function ${fn}_names
    set -l tokens (commandline -opc)
    set -l args
    for i in (seq 2 (count $tokens))
        if contains -- $tokens[$i] --store --url; and test $i -lt (count $tokens)
            set args $args $tokens[$i] $tokens[(math $i + 1)]
        end
    end
    if command -q timeout
        timeout 3 $tokens[1] apikey --list $args </dev/null 2>/dev/null | cut -f1
    else
        $tokens[1] apikey --list $args </dev/null 2>/dev/null | cut -f1
    end
end

# Comma-separated values: completes the last item of the list typed so far.
function ${fn}_values
    set -l typed (commandline -ct | string replace -r '^--[a-z-]+=' '')
    set -l head ""
    string match -q '*,*' -- $typed; and set head (string replace -r '[^,]*$' '' -- $typed)
    set -l item (string replace -r '^.*,' '' -- $typed)
    switch $argv[1]
        case roles
            for r in ${spec.roles.join(" ")}
                printf '%s\\n' "$head$r"
            end
        case permissions
            if string match -q '*:*' -- $item
                set -l res (string split -m1 : -- $item)[1]
                for a in ${spec.actions.join(" ")}
                    printf '%s\\n' "$head$res:$a"
                end
            else
                for r in ${spec.resources.join(" ")}
                    printf '%s\\n' "$head$r:"
                end
            end
    end
end

complete -c ${p} -f
complete -c ${p} -n 'not __fish_seen_subcommand_from ${names}' -a '${names}'
${spec.global.map((f) => line(f, "true")).join("\n")}
${spec.commands.flatMap((c) => c.flags.map((f) => line(f, `__fish_seen_subcommand_from ${c.name}`))).join("\n")}
complete -c ${p} -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'
`;
}
