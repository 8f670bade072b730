"""advisor.fleet"""
