"""advisor.facts"""
