#!/bin/bash
# DevStack plugin entry point for cyborg; the work is in devstack/lib/cyborg.

source $DEST/cyborg/devstack/lib/cyborg

if is_service_enabled cyborg-api cyborg-cond cyborg-agent; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing cyborg"
        install_cyborg
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring cyborg"
        configure_cyborg
        if is_service_enabled key; then
            create_cyborg_accounts
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Initializing and starting cyborg"
        init_cyborg
        start_cyborg
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_cyborg
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_cyborg
    fi
fi
