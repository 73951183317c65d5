
#compdef nervamem

_nervamem_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _NERVAMEM_COMPLETE=complete_zsh nervamem)
}

compdef _nervamem_completion nervamem

