"""curate"""
